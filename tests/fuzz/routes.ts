/**
 * Every route the server registers, with what the fuzz needs to know about
 * it: who may call it, which body members and query parameters it reads, and
 * a plausible value for each (so a mutation of one member reaches the checks
 * behind the others). fuzz_test.ts fails when a row is added to
 * server/api/routes.ts without an entry here.
 */
import { ROUTES as TABLE } from "../../server/api/routes.ts";
import { GRANTS as GRANT_TABLE } from "../../server/api/token.ts";
import type { Rng } from "./rng.ts";
import { anyJson, edgeString, emailish, phoneish } from "./values.ts";

/** A user the fuzz owns: created through the admin API, signed in, with a TOTP factor. */
export interface FxUser {
  id: string;
  email: string;
  phone: string;
  password: string;
  access: string;
  refresh: string;
  factorId: string;
  challengeId: string;
  identityId: string;
}

/** An ID token the local issuer signed, for the provider whose issuer it names. */
export interface SignedIdToken {
  provider: string;
  token: string;
}

/** The operator's console session the fuzz holds (harness.ts `consoleSignIn`). */
export interface ConsoleAuth {
  /** The console's cookies: access and refresh token, CSRF. */
  at: string;
  rt: string;
  csrf: string;
  /** The console server's own origin. */
  origin: string;
}

/** What a generator can draw from: the caller, another user, a fresh tag for unique values. */
export interface GenCtx {
  r: Rng;
  me: FxUser;
  other: FxUser;
  tag: string;
  /** ID tokens with hostile claims, validly signed by the run's local issuer (claims.ts). */
  idTokens: SignedIdToken[];
  /** Values one member's generator leaves for another's, within one request. */
  memo: Record<string, unknown>;
  /** The operator's console session (console routes only). */
  console?: ConsoleAuth;
}

export type FieldGen = (g: GenCtx) => unknown;

/** One route (one grant type of /token counts as a route of its own). */
export interface RouteSpec {
  name: string;
  method: "GET" | "HEAD" | "POST" | "PUT" | "DELETE";
  path: string;
  /** Fixed query string part (the grant type). */
  fixedQuery?: string;
  /** Who calls: nobody, a user's or the service role's bearer token, the console's operator. */
  auth: "none" | "user" | "admin" | "console";
  /** The row of the route table it covers, when not `${method} ${path}` (console_routes.ts). */
  row?: string;
  /** Body members and a plausible value of each. */
  body?: Record<string, FieldGen>;
  /** Query parameters and a plausible value of each. */
  query?: Record<string, FieldGen>;
  /** A 2xx may have used up the caller's session, password, factor or account. */
  destructive?: boolean;
}

const PASSWORD = "Fuzz-pw-12345";
export const redirect: FieldGen = ({ r }) =>
  r.pick([
    "http://localhost:3000/welcome",
    "http://localhost:3000",
    "https://evil.example/x",
    "javascript:alert(1)",
    "//evil.example",
    `http://localhost:3000/${edgeString(r)}`,
  ]);
export const fresh: FieldGen = ({ r, tag }) => emailish(r, tag);
export const emailOf = (g: GenCtx) => g.r.pick([g.me.email, g.other.email, emailish(g.r, g.tag)]);
const phoneOf = (g: GenCtx) => g.r.pick([g.me.phone, g.other.phone, phoneish(g.r)]);
export const password: FieldGen = ({ r, me }) =>
  r.pick([PASSWORD, me.password, "short", "a".repeat(80), `Pw-${edgeString(r)}-1234`]);
export const data: FieldGen = ({ r }) => r.chance(0.5) ? { name: edgeString(r) } : anyJson(r, 3);
export const code6: FieldGen = ({ r }) =>
  r.pick(["123456", "000000", String(r.range(0, 999999)), "12"]);
export const tokenish: FieldGen = ({ r }) =>
  r.pick(["123456", "pkce_" + "a".repeat(20), r.uuid(), "a".repeat(56), edgeString(r)]);
const challenge: FieldGen = ({ r }) =>
  r.pick(["E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "x", "a".repeat(200)]);
const challengeMethod: FieldGen = ({ r }) => r.pick(["s256", "S256", "plain", "md5"]);
export const emailTypes: FieldGen = ({ r }) =>
  r.pick([
    "signup",
    "invite",
    "magiclink",
    "recovery",
    "email_change",
    "email",
    "sms",
    "phone_change",
    "x",
  ]);
const provider: FieldGen = ({ r }) => r.pick(["github", "google", "keycloak", "nope", "GitHub"]);
export const bool: FieldGen = ({ r }) => r.chance(0.5);
export const page: FieldGen = ({ r }) => r.pick(["1", "2", "0", "-1", "999999999999", "1.5", "a"]);

/** The route table. */
export const ROUTES: RouteSpec[] = [
  { name: "GET /health", method: "GET", path: "/health", auth: "none" },
  { name: "GET /settings", method: "GET", path: "/settings", auth: "none" },
  {
    name: "GET /.well-known/jwks.json",
    method: "GET",
    path: "/.well-known/jwks.json",
    auth: "none",
  },
  {
    name: "GET /authorize",
    method: "GET",
    path: "/authorize",
    auth: "none",
    query: {
      provider,
      redirect_to: redirect,
      scopes: ({ r }) => r.pick(["email", "repo user", edgeString(r)]),
      code_challenge: challenge,
      code_challenge_method: challengeMethod,
      skip_http_redirect: ({ r }) => r.pick(["true", "false", "1"]),
    },
  },
  {
    name: "GET /user/identities/authorize",
    method: "GET",
    path: "/user/identities/authorize",
    auth: "user",
    query: { provider, redirect_to: redirect, skip_http_redirect: () => "true" },
  },
  {
    name: "GET /user/identities/authorize/continue",
    method: "GET",
    path: "/user/identities/authorize/continue",
    auth: "none",
    query: { ticket: tokenish },
  },
  {
    name: "DELETE /user/identities/:identity_id",
    method: "DELETE",
    path: "/user/identities/:identity_id",
    auth: "user",
    destructive: true,
  },
  {
    name: "GET /callback",
    method: "GET",
    path: "/callback",
    auth: "none",
    query: {
      code: tokenish,
      state: tokenish,
      error: ({ r }) => r.pick(["access_denied", edgeString(r)]),
      error_description: ({ r }) => edgeString(r),
    },
  },
  {
    name: "POST /callback",
    method: "POST",
    path: "/callback",
    auth: "none",
    body: { code: tokenish, state: tokenish, error: ({ r }) => edgeString(r) },
    query: { state: tokenish },
  },
  {
    name: "GET /admin/audit",
    method: "GET",
    path: "/admin/audit",
    auth: "admin",
    query: {
      page,
      per_page: page,
      query: ({ r }) =>
        r.pick(["action:login", "type:account", `action:${edgeString(r)}`, edgeString(r)]),
    },
  },
  {
    name: "POST /factors",
    method: "POST",
    path: "/factors",
    auth: "user",
    body: {
      factor_type: ({ r }) => r.pick(["totp", "phone", "webauthn", "TOTP"]),
      friendly_name: ({ r, tag }) => r.pick([`f-${tag}`, edgeString(r), ""]),
      issuer: ({ r }) => r.pick(["Fuzz", edgeString(r), "a:b", "a%20b"]),
      phone: phoneOf,
    },
    destructive: true,
  },
  {
    name: "POST /factors/:factor_id/challenge",
    method: "POST",
    path: "/factors/:factor_id/challenge",
    auth: "user",
    body: { channel: ({ r }) => r.pick(["sms", "whatsapp", edgeString(r)]) },
  },
  {
    name: "POST /factors/:factor_id/verify",
    method: "POST",
    path: "/factors/:factor_id/verify",
    auth: "user",
    body: { challenge_id: ({ r, me }) => r.chance(0.7) ? me.challengeId : r.uuid(), code: code6 },
    destructive: true,
  },
  {
    name: "DELETE /factors/:factor_id",
    method: "DELETE",
    path: "/factors/:factor_id",
    auth: "user",
    destructive: true,
  },
  {
    name: "GET /admin/users/:user_id/factors",
    method: "GET",
    path: "/admin/users/:user_id/factors",
    auth: "admin",
  },
  {
    name: "GET /admin/users/:user_id/sessions",
    method: "GET",
    path: "/admin/users/:user_id/sessions",
    auth: "admin",
  },
  {
    name: "DELETE /admin/users/:user_id/sessions",
    method: "DELETE",
    path: "/admin/users/:user_id/sessions",
    auth: "admin",
    destructive: true,
  },
  {
    name: "PUT /admin/users/:user_id/factors/:factor_id",
    method: "PUT",
    path: "/admin/users/:user_id/factors/:factor_id",
    auth: "admin",
    body: {
      friendly_name: ({ r, tag }) => r.pick(["", `name-${tag}`, edgeString(r)]),
      phone: phoneOf,
    },
  },
  {
    name: "DELETE /admin/users/:user_id/factors/:factor_id",
    method: "DELETE",
    path: "/admin/users/:user_id/factors/:factor_id",
    auth: "admin",
    destructive: true,
  },
  {
    name: "POST /signup",
    method: "POST",
    path: "/signup",
    auth: "none",
    body: {
      email: fresh,
      password,
      phone: ({ r }) => phoneish(r),
      data,
      code_challenge: challenge,
      code_challenge_method: challengeMethod,
      channel: ({ r }) => r.pick(["sms", "whatsapp"]),
      gotrue_meta_security: ({ r }) => ({ captcha_token: edgeString(r) }),
    },
    query: { redirect_to: redirect },
  },
  {
    name: "POST /token grant_type=password",
    method: "POST",
    path: "/token",
    fixedQuery: "grant_type=password",
    auth: "none",
    body: { email: emailOf, password, phone: phoneOf },
  },
  {
    name: "POST /token grant_type=refresh_token",
    method: "POST",
    path: "/token",
    fixedQuery: "grant_type=refresh_token",
    auth: "none",
    body: { refresh_token: ({ r, me }) => r.chance(0.6) ? me.refresh : tokenish({ r } as GenCtx) },
    destructive: true,
  },
  {
    name: "POST /token grant_type=pkce",
    method: "POST",
    path: "/token",
    fixedQuery: "grant_type=pkce",
    auth: "none",
    body: {
      auth_code: ({ r }) => r.uuid(),
      code_verifier: ({ r }) => r.pick(["a".repeat(43), "short", "a".repeat(200)]),
    },
  },
  {
    name: "POST /token grant_type=id_token",
    method: "POST",
    path: "/token",
    fixedQuery: "grant_type=id_token",
    auth: "none",
    body: {
      // Mostly an ID token the run's local issuer signed, with hostile claims (claims.ts).
      id_token: (g) => {
        if (g.idTokens.length && g.r.chance(0.75)) {
          const t = g.r.pick(g.idTokens);
          g.memo.provider = t.provider;
          return t.token;
        }
        return g.r.pick(["a.b.c", tokenish(g), edgeString(g.r)]);
      },
      provider: (g) =>
        g.memo.provider !== undefined && g.r.chance(0.85)
          ? g.memo.provider
          : g.r.pick(["google", "apple", "keycloak", "azure", "facebook", "nope"]),
      // The tokens carry no nonce: a nonce in the body is "both or neither" (400) most of the time.
      nonce: ({ r }) => r.chance(0.8) ? undefined : edgeString(r),
      link_identity: ({ r }) => r.chance(0.3),
    },
  },
  { name: "GET /user", method: "GET", path: "/user", auth: "user" },
  {
    name: "PUT /user",
    method: "PUT",
    path: "/user",
    auth: "user",
    body: {
      email: ({ r, tag, other }) => r.chance(0.2) ? other.email : emailish(r, tag),
      phone: ({ r, other }) => r.chance(0.2) ? other.phone : phoneish(r),
      password,
      data,
      nonce: code6,
      app_metadata: data,
    },
    destructive: true,
  },
  {
    name: "POST /logout",
    method: "POST",
    path: "/logout",
    auth: "user",
    query: { scope: ({ r }) => r.pick(["global", "local", "others", "x"]) },
    destructive: true,
  },
  {
    name: "GET /admin/users",
    method: "GET",
    path: "/admin/users",
    auth: "admin",
    query: { page, per_page: page, filter: ({ r }) => r.pick(["fz", "", edgeString(r)]) },
  },
  {
    name: "POST /admin/users",
    method: "POST",
    path: "/admin/users",
    auth: "admin",
    body: adminUserBody(),
  },
  {
    name: "GET /admin/users/:user_id",
    method: "GET",
    path: "/admin/users/:user_id",
    auth: "admin",
  },
  {
    name: "PUT /admin/users/:user_id",
    method: "PUT",
    path: "/admin/users/:user_id",
    auth: "admin",
    body: adminUserBody(),
    destructive: true,
  },
  {
    name: "POST /admin/users/:user_id",
    method: "POST",
    path: "/admin/users/:user_id",
    auth: "admin",
    body: adminUserBody(),
    destructive: true,
  },
  {
    name: "DELETE /admin/users/:user_id",
    method: "DELETE",
    path: "/admin/users/:user_id",
    auth: "admin",
    body: { should_soft_delete: bool },
    destructive: true,
  },
  {
    name: "POST /admin/generate_link",
    method: "POST",
    path: "/admin/generate_link",
    auth: "admin",
    body: {
      type: ({ r }) =>
        r.pick(["signup", "invite", "magiclink", "recovery", "email_change_new", "x"]),
      email: emailOf,
      new_email: fresh,
      password,
      data,
      redirect_to: redirect,
    },
  },
  {
    name: "GET /verify",
    method: "GET",
    path: "/verify",
    auth: "none",
    query: { type: emailTypes, token: tokenish, redirect_to: redirect },
  },
  {
    name: "HEAD /verify",
    method: "HEAD",
    path: "/verify",
    auth: "none",
    query: { type: emailTypes, token: tokenish, redirect_to: redirect },
  },
  {
    name: "POST /verify",
    method: "POST",
    path: "/verify",
    auth: "none",
    body: {
      type: emailTypes,
      token: tokenish,
      token_hash: tokenish,
      email: emailOf,
      phone: phoneOf,
      password,
      redirect_to: redirect,
    },
  },
  {
    name: "POST /otp",
    method: "POST",
    path: "/otp",
    auth: "none",
    body: {
      email: emailOf,
      phone: phoneOf,
      create_user: bool,
      data,
      code_challenge: challenge,
      code_challenge_method: challengeMethod,
      channel: ({ r }) => r.pick(["sms", "whatsapp", "x"]),
    },
    query: { redirect_to: redirect },
  },
  {
    name: "POST /magiclink",
    method: "POST",
    path: "/magiclink",
    auth: "none",
    body: { email: emailOf, data },
    query: { redirect_to: redirect },
  },
  {
    name: "POST /recover",
    method: "POST",
    path: "/recover",
    auth: "none",
    body: { email: emailOf, code_challenge: challenge, code_challenge_method: challengeMethod },
    query: { redirect_to: redirect },
  },
  {
    name: "POST /resend",
    method: "POST",
    path: "/resend",
    auth: "none",
    body: { type: emailTypes, email: emailOf, phone: phoneOf },
  },
  {
    name: "POST /invite",
    method: "POST",
    path: "/invite",
    auth: "admin",
    body: { email: fresh, data },
    query: { redirect_to: redirect },
  },
  { name: "GET /reauthenticate", method: "GET", path: "/reauthenticate", auth: "user" },
  // SAML is not implemented: each answers 404 saml_provider_disabled (server/api/saml.ts).
  { name: "POST /sso", method: "POST", path: "/sso", auth: "none" },
  { name: "GET /sso/saml/metadata", method: "GET", path: "/sso/saml/metadata", auth: "none" },
  { name: "POST /sso/saml/acs", method: "POST", path: "/sso/saml/acs", auth: "none" },
];

/** The body members of the admin API's user create and update. */
export function adminUserBody(): Record<string, FieldGen> {
  return {
    email: (g) => g.r.chance(0.3) ? g.other.email : emailish(g.r, g.tag),
    phone: (g) => g.r.chance(0.3) ? g.other.phone : phoneish(g.r),
    password,
    password_hash: ({ r }) =>
      r.pick([
        "$2a$10$abcdefghijklmnopqrstuuM0eWJ1KzY2xNwGkmhG4wM8r2mQW1HMa",
        "$argon2id$v=19$m=16,t=2,p=1$YWFhYWFhYWE$x",
        "plain",
      ]),
    email_confirm: bool,
    phone_confirm: bool,
    user_metadata: data,
    app_metadata: data,
    role: ({ r }) => r.pick(["authenticated", "service_role", "", edgeString(r)]),
    ban_duration: ({ r }) => r.pick(["none", "1h", "24h", "-1h", "9999999h", "x"]),
    id: ({ r, me }) => r.pick([r.uuid(), me.id, "not-a-uuid"]),
  };
}

/** The rows of the server's route table (server/api/routes.ts): `METHOD path`. */
export function registeredRoutes(): string[] {
  return [...new Set(TABLE.map(([method, path]) => `${method} ${path}`))].sort();
}

/** The grant types /token names in its unsupported_grant_type answer. */
export const GRANTS = [...GRANT_TABLE.keys()];
