/**
 * Local fakes of the social providers' documented OAuth endpoints, one
 * `Deno.serve` on 127.0.0.1 (port 0) per provider, reached through the
 * server's `EXTERNAL_<X>_URL` base override. Each fake checks every request
 * the way the real API documents it (client authentication scheme, grant
 * fields, redirect_uri, PKCE, required scopes and parameters, the bearer token
 * and headers of user-info calls) and answers with that provider's response
 * shapes. A failed check answers 400/401 and is recorded in `problems`.
 *
 *   const fake = await startProviderFake("github", { user: { id: "1", email: "a@b.c" } });
 *   // server env: AUTHSVC_EXTERNAL_GITHUB_URL = fake.url, ... CLIENT_ID = fake.clientId
 *   const cb = await fake.approve(providerAuthorizeUrl); // the user consents
 *   await fetch(cb.url, cb.init); // the browser returns to /callback
 *
 * OpenID providers (apple, azure, google, linkedin, slack) sign ID tokens with
 * an RSA key published at their JWKS path, with the issuer the server expects
 * for that base, the client id as audience and the nonce of the request.
 * @module
 */
import { jose } from "../../deps.ts";

/** The person signing in at the fake. */
export interface FakeUser {
  id: string;
  /** Primary address; absent: the provider does not share one. */
  email?: string;
  /** Whether the provider verified it (default true). */
  emailVerified?: boolean;
  name?: string;
  avatar?: string;
  /** Further addresses (github, gitlab, bitbucket). */
  extraEmails?: { email: string; verified: boolean }[];
}

/** Options of a fake. */
export interface FakeOptions {
  user: FakeUser;
  clientId?: string;
  secret?: string;
}

/** What the browser does after consent: the request to the server's /callback. */
export interface CallbackRequest {
  url: string;
  init: RequestInit;
}

/** A running fake. */
export interface ProviderFake {
  name: string;
  /** The base URL (EXTERNAL_<X>_URL). */
  url: string;
  clientId: string;
  secret: string;
  /** The person who consents next (change it between sign-ins). */
  user: FakeUser;
  /** Checks that failed, e.g. "token: client authentication missing". */
  problems: string[];
  /** "METHOD /path" of every request. */
  requests: string[];
  /** The server environment that enables this provider against the fake. */
  env(redirectUri: string): Record<string, string>;
  /** Consents at the authorize URL and returns the callback request. */
  approve(authorizeUrl: string, opts?: { postUser?: unknown }): Promise<CallbackRequest>;
  /** Declines: the callback carries `error=access_denied`. */
  deny(authorizeUrl: string): Promise<CallbackRequest>;
  /** Makes the token endpoint refuse the next code. */
  failNextToken(): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

interface Grant {
  redirectUri: string;
  challenge?: string;
  nonce?: string;
  scope: string;
  user: FakeUser;
}

interface IssuedToken {
  user: FakeUser;
}

interface Ctx {
  origin: string;
  clientId: string;
  secret: string;
  grant: Grant;
  accessToken: string;
  idToken(extra: Json): Promise<string>;
}

type Route = (req: Request, url: URL, who: IssuedToken, f: FakeState) => Json | unknown[];

/** How one provider behaves. */
interface FakeSpec {
  authorize: string;
  token: string;
  /** basic: Authorization Basic; body: client_id + client_secret in the form; basic_json: Basic + JSON body. */
  auth: "basic" | "body" | "basic_json";
  pkce: "required" | "optional" | "none";
  scopes: string[];
  /** Extra checks of the authorization request; returns a problem or undefined. */
  authorizeCheck?: (q: URLSearchParams) => string | undefined;
  formPost?: boolean;
  oidc?: { issuer: (origin: string) => string; jwks: string };
  tokenResponse(ctx: Ctx): Promise<Json>;
  /** "GET /path" → handler. */
  routes?: Record<string, Route>;
  /** A token error body (status 400 unless `status`). */
  tokenError: { status: number; body: Json };
}

interface FakeState {
  spec: FakeSpec;
  problems: string[];
  clientId: string;
  secret: string;
}

const emailOf = (u: FakeUser) => u.email;
const verified = (u: FakeUser) => u.emailVerified !== false;
const rnd = () => crypto.randomUUID().replaceAll("-", "");

function given(u: FakeUser): string {
  return (u.name ?? "Test User").split(" ")[0];
}
function family(u: FakeUser): string {
  return (u.name ?? "Test User").split(" ").slice(1).join(" ") || "User";
}

const STD_ERROR = { status: 400, body: { error: "invalid_grant", error_description: "bad code" } };

/** The fakes by provider name (all but keycloak, which runs on oidc-provider). */
const SPECS: Record<string, FakeSpec> = {
  apple: {
    authorize: "/auth/authorize",
    token: "/auth/token",
    auth: "body",
    pkce: "none",
    scopes: ["name", "email"],
    formPost: true,
    authorizeCheck: (q) =>
      q.get("response_mode") === "form_post" ? undefined : "response_mode=form_post is required",
    oidc: { issuer: (o) => o, jwks: "/auth/keys" },
    async tokenResponse(c) {
      const u = c.grant.user;
      const claims: Json = { sub: u.id, auth_time: Math.floor(Date.now() / 1000) };
      if (emailOf(u)) {
        claims.email = emailOf(u);
        claims.email_verified = "true";
        claims.is_private_email = String(emailOf(u)!.endsWith("privaterelay.appleid.com"));
      }
      return {
        access_token: c.accessToken,
        token_type: "Bearer",
        expires_in: 3600,
        refresh_token: `r.${rnd()}`,
        id_token: await c.idToken(claims),
      };
    },
    tokenError: STD_ERROR,
  },
  azure: {
    authorize: "/common/oauth2/v2.0/authorize",
    token: "/common/oauth2/v2.0/token",
    auth: "body",
    pkce: "optional",
    scopes: ["openid", "email", "profile"],
    oidc: { issuer: (o) => `${o}/${AZURE_TID}/v2.0`, jwks: "/common/discovery/v2.0/keys" },
    async tokenResponse(c) {
      const u = c.grant.user;
      const claims: Json = {
        sub: u.id,
        oid: `oid-${u.id}`,
        tid: AZURE_TID,
        name: u.name,
        preferred_username: emailOf(u) ?? `${u.id}@contoso.onmicrosoft.com`,
        ver: "2.0",
      };
      if (emailOf(u)) claims.email = emailOf(u);
      if (verified(u)) claims.xms_edov = true;
      return {
        token_type: "Bearer",
        scope: "openid email profile",
        expires_in: 3599,
        ext_expires_in: 3599,
        access_token: c.accessToken,
        id_token: await c.idToken(claims),
      };
    },
    tokenError: {
      status: 400,
      body: {
        error: "invalid_grant",
        error_description: "AADSTS70008: The provided authorization code has expired.",
        error_codes: [70008],
      },
    },
  },
  bitbucket: {
    authorize: "/site/oauth2/authorize",
    token: "/site/oauth2/access_token",
    auth: "basic",
    pkce: "none",
    scopes: ["account", "email"],
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        scopes: "account email",
        expires_in: 7200,
        refresh_token: rnd(),
        token_type: "bearer",
      }),
    routes: {
      "GET /2.0/user": (_r, _u, { user }) => ({
        type: "user",
        uuid: `{${user.id}}`,
        account_id: `acc-${user.id}`,
        username: `user${user.id}`,
        display_name: user.name,
        links: { avatar: { href: user.avatar ?? "https://bitbucket.org/avatar.png" } },
      }),
      "GET /2.0/user/emails": (_r, _u, { user }) => ({
        pagelen: 10,
        page: 1,
        size: 1,
        values: allEmails(user).map((e) => ({
          type: "email",
          email: e.email,
          is_primary: e.primary,
          is_confirmed: e.verified,
        })),
      }),
    },
    tokenError: {
      status: 400,
      body: { error: "invalid_grant", error_description: "Invalid code" },
    },
  },
  discord: {
    authorize: "/oauth2/authorize",
    token: "/api/oauth2/token",
    auth: "basic",
    pkce: "none",
    scopes: ["identify", "email"],
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        token_type: "Bearer",
        expires_in: 604800,
        refresh_token: rnd(),
        scope: "identify email",
      }),
    routes: {
      "GET /api/users/@me": (_r, _u, { user }) => ({
        id: user.id,
        username: (user.name ?? "user").toLowerCase().replaceAll(" ", ""),
        discriminator: "0",
        global_name: user.name ?? null,
        avatar: "a_1269e74af4df7417b13759eae50c83dc",
        verified: verified(user),
        email: emailOf(user) ?? null,
        flags: 0,
        mfa_enabled: false,
      }),
    },
    tokenError: STD_ERROR,
  },
  facebook: {
    authorize: "/dialog/oauth",
    token: "/oauth/access_token",
    auth: "body",
    pkce: "none",
    scopes: ["email"],
    tokenResponse: (c) =>
      Promise.resolve({ access_token: c.accessToken, token_type: "bearer", expires_in: 5183944 }),
    routes: {
      "GET /me": (_r, url, { user }, f) => {
        const fields = (url.searchParams.get("fields") ?? "").split(",");
        if (!fields.includes("email")) f.problems.push("me: fields must include email");
        const out: Json = {
          id: user.id,
          name: user.name,
          first_name: given(user),
          last_name: family(user),
          picture: {
            data: {
              height: 50,
              is_silhouette: false,
              url: user.avatar ?? "https://fb/p.jpg",
              width: 50,
            },
          },
        };
        if (emailOf(user)) out.email = emailOf(user);
        return out;
      },
    },
    tokenError: {
      status: 400,
      body: {
        error: {
          message: "Invalid verification code format.",
          type: "OAuthException",
          code: 100,
          fbtrace_id: "A1",
        },
      },
    },
  },
  figma: {
    authorize: "/oauth",
    token: "/v1/oauth/token",
    auth: "basic",
    pkce: "none",
    scopes: ["current_user:read"],
    tokenResponse: (c) =>
      Promise.resolve({
        user_id_string: c.grant.user.id,
        access_token: c.accessToken,
        token_type: "bearer",
        expires_in: 7776000,
        refresh_token: rnd(),
      }),
    routes: {
      "GET /v1/me": (_r, _u, { user }) => ({
        id: user.id,
        email: emailOf(user),
        handle: user.name,
        img_url: user.avatar ?? "https://s3-alpha.figma.com/profile/x",
      }),
    },
    tokenError: { status: 400, body: { error: true, status: 400, message: "Invalid code" } },
  },
  github: {
    authorize: "/login/oauth/authorize",
    token: "/login/oauth/access_token",
    auth: "body",
    pkce: "optional",
    scopes: ["user:email"],
    tokenResponse: (c) =>
      Promise.resolve({ access_token: c.accessToken, scope: "user:email", token_type: "bearer" }),
    routes: {
      "GET /api/v3/user": (_r, _u, { user }) => ({
        login: `octo${user.id}`,
        id: Number(user.id),
        node_id: "MDQ6VXNlcjE=",
        avatar_url: user.avatar ?? "https://github.com/images/error/octocat_happy.gif",
        type: "User",
        name: user.name ?? null,
        email: null, // the public address; private ones only through /user/emails
      }),
      "GET /api/v3/user/emails": (_r, _u, { user }) =>
        allEmails(user).map((e) => ({
          email: e.email,
          verified: e.verified,
          primary: e.primary,
          visibility: e.primary ? "private" : null,
        })),
    },
    // GitHub answers a bad code with status 200 and an error body.
    tokenError: {
      status: 200,
      body: {
        error: "bad_verification_code",
        error_description: "The code passed is incorrect or expired.",
        error_uri: "https://docs.github.com/apps/troubleshooting-oauth-apps",
      },
    },
  },
  gitlab: {
    authorize: "/oauth/authorize",
    token: "/oauth/token",
    auth: "body",
    pkce: "optional",
    scopes: ["read_user"],
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        token_type: "Bearer",
        expires_in: 7200,
        refresh_token: rnd(),
        scope: "read_user",
        created_at: Math.floor(Date.now() / 1000),
      }),
    routes: {
      "GET /api/v4/user": (_r, _u, { user }) => ({
        id: Number(user.id),
        username: `user${user.id}`,
        name: user.name,
        state: "active",
        avatar_url: user.avatar ?? "https://gitlab.com/uploads/avatar.png",
        email: emailOf(user) ?? "",
        confirmed_at: verified(user) ? "2020-01-01T00:00:00.000Z" : null,
      }),
      "GET /api/v4/user/emails": (_r, _u, { user }) =>
        (user.extraEmails ?? []).map((e, i) => ({
          id: i + 1,
          email: e.email,
          confirmed_at: e.verified ? "2021-01-01T00:00:00.000Z" : null,
        })),
    },
    tokenError: {
      status: 400,
      body: {
        error: "invalid_grant",
        error_description: "The provided authorization grant is invalid",
      },
    },
  },
  google: {
    authorize: "/o/oauth2/v2/auth",
    token: "/token",
    auth: "body",
    pkce: "optional",
    scopes: ["openid", "email", "profile"],
    oidc: { issuer: (o) => o, jwks: "/oauth2/v3/certs" },
    async tokenResponse(c) {
      const u = c.grant.user;
      const claims: Json = {
        sub: u.id,
        azp: c.clientId,
        name: u.name,
        given_name: given(u),
        family_name: family(u),
        picture: u.avatar ?? "https://lh3.googleusercontent.com/a/x",
        at_hash: await atHash(c.accessToken),
      };
      if (emailOf(u)) {
        claims.email = emailOf(u);
        claims.email_verified = verified(u);
      }
      return {
        access_token: c.accessToken,
        expires_in: 3599,
        scope: c.grant.scope,
        token_type: "Bearer",
        id_token: await c.idToken(claims),
      };
    },
    tokenError: { status: 400, body: { error: "invalid_grant", error_description: "Bad Request" } },
  },
  linkedin: {
    authorize: "/oauth/v2/authorization",
    token: "/oauth/v2/accessToken",
    auth: "body",
    pkce: "none",
    scopes: ["openid", "profile", "email"],
    oidc: { issuer: (o) => `${o}/oauth`, jwks: "/oauth/openid/jwks" },
    async tokenResponse(c) {
      const u = c.grant.user;
      const claims: Json = {
        sub: u.id,
        name: u.name,
        given_name: given(u),
        family_name: family(u),
        picture: u.avatar ?? "https://media.licdn.com/x.jpg",
        locale: "en_US",
      };
      if (emailOf(u)) {
        claims.email = emailOf(u);
        claims.email_verified = String(verified(u)); // LinkedIn sends a string here
      }
      return {
        access_token: c.accessToken,
        expires_in: 5184000,
        scope: "email,openid,profile",
        token_type: "Bearer",
        id_token: await c.idToken(claims),
      };
    },
    tokenError: {
      status: 400,
      body: { error: "invalid_request", error_description: "Unable to retrieve access token" },
    },
  },
  notion: {
    authorize: "/v1/oauth/authorize",
    token: "/v1/oauth/token",
    auth: "basic_json",
    pkce: "none",
    scopes: [],
    authorizeCheck: (q) => (q.get("owner") === "user" ? undefined : "owner=user is required"),
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        token_type: "bearer",
        refresh_token: null,
        bot_id: `bot-${c.grant.user.id}`,
        workspace_name: "Acme",
        workspace_icon: null,
        workspace_id: "ws-1",
        owner: { type: "user", user: notionPerson(c.grant.user) },
        duplicated_template_id: null,
        request_id: rnd(),
      }),
    routes: {
      "GET /v1/users/me": (req, _u, { user }, f) => {
        if (!req.headers.get("notion-version")) f.problems.push("users/me: Notion-Version missing");
        return {
          object: "user",
          id: `bot-${user.id}`,
          name: "Sign-in",
          avatar_url: null,
          type: "bot",
          bot: { owner: { type: "user", user: notionPerson(user) }, workspace_name: "Acme" },
          request_id: rnd(),
        };
      },
    },
    tokenError: {
      status: 400,
      body: { error: "invalid_grant", error_description: "Invalid code.", request_id: "x" },
    },
  },
  slack: {
    authorize: "/openid/connect/authorize",
    token: "/api/openid.connect.token",
    auth: "body",
    pkce: "none",
    scopes: ["openid", "profile", "email"],
    oidc: { issuer: (o) => o, jwks: "/openid/connect/keys" },
    async tokenResponse(c) {
      const u = c.grant.user;
      const claims: Json = {
        sub: u.id,
        "https://slack.com/user_id": u.id,
        "https://slack.com/team_id": "T0123",
        name: u.name,
        picture: u.avatar ?? "https://secure.gravatar.com/avatar/x.jpg",
        given_name: given(u),
        family_name: family(u),
        locale: "en-US",
        "https://slack.com/team_name": "Acme",
      };
      if (emailOf(u)) {
        claims.email = emailOf(u);
        claims.email_verified = verified(u);
      }
      return {
        ok: true,
        access_token: c.accessToken,
        token_type: "Bearer",
        id_token: await c.idToken(claims),
      };
    },
    // Slack answers errors with status 200.
    tokenError: { status: 200, body: { ok: false, error: "invalid_code" } },
  },
  snapchat: {
    authorize: "/accounts/oauth2/auth",
    token: "/accounts/oauth2/token",
    auth: "basic",
    pkce: "optional",
    scopes: [
      "https://auth.snapchat.com/oauth2/api/user.external_id",
      "https://auth.snapchat.com/oauth2/api/user.display_name",
    ],
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        refresh_token: rnd(),
        token_type: "Bearer",
        expires_in: 3600,
        scope: c.grant.scope,
      }),
    routes: {
      "GET /v1/me": (_r, url, { user }, f) => {
        if (!(url.searchParams.get("query") ?? "").includes("externalId")) {
          f.problems.push("me: the GraphQL query must ask for externalId");
        }
        return {
          data: {
            me: {
              externalId: user.id,
              displayName: user.name,
              bitmoji: { avatar: user.avatar ?? "https://sdk.bitmoji.com/x.png", id: "b1" },
            },
          },
        };
      },
    },
    tokenError: { status: 400, body: { error: "invalid_grant" } },
  },
  spotify: {
    authorize: "/authorize",
    token: "/api/token",
    auth: "basic",
    pkce: "optional",
    scopes: ["user-read-email"],
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        token_type: "Bearer",
        scope: "user-read-email",
        expires_in: 3600,
        refresh_token: rnd(),
      }),
    routes: {
      "GET /v1/me": (_r, _u, { user }) => ({
        country: "SE",
        display_name: user.name,
        email: emailOf(user),
        explicit_content: { filter_enabled: false, filter_locked: false },
        external_urls: { spotify: `https://open.spotify.com/user/${user.id}` },
        followers: { href: null, total: 0 },
        href: `https://api.spotify.com/v1/users/${user.id}`,
        id: user.id,
        images: [
          { url: "https://i.scdn.co/image/small", height: 64, width: 64 },
          { url: user.avatar ?? "https://i.scdn.co/image/large", height: 300, width: 300 },
        ],
        product: "premium",
        type: "user",
        uri: `spotify:user:${user.id}`,
      }),
    },
    tokenError: {
      status: 400,
      body: { error: "invalid_grant", error_description: "Invalid authorization code" },
    },
  },
  twitch: {
    authorize: "/oauth2/authorize",
    token: "/oauth2/token",
    auth: "body",
    pkce: "none",
    scopes: ["user:read:email"],
    tokenResponse: (c) =>
      Promise.resolve({
        access_token: c.accessToken,
        expires_in: 14124,
        refresh_token: rnd(),
        scope: ["user:read:email"],
        token_type: "bearer",
      }),
    routes: {
      "GET /helix/users": (req, _u, { user }, f) => {
        if (req.headers.get("client-id") !== f.clientId) {
          f.problems.push("helix/users: Client-Id header missing or wrong");
        }
        const u: Json = {
          id: user.id,
          login: (user.name ?? "user").toLowerCase().replaceAll(" ", ""),
          display_name: user.name,
          type: "",
          broadcaster_type: "partner",
          description: "",
          profile_image_url: user.avatar ?? "https://static-cdn.jtvnw.net/p.png",
          offline_image_url: "",
          view_count: 0,
          created_at: "2016-12-14T20:32:28Z",
        };
        if (emailOf(user) && verified(user)) u.email = emailOf(user);
        return { data: [u] };
      },
    },
    tokenError: { status: 400, body: { status: 400, message: "Invalid authorization code" } },
  },
  twitter: {
    authorize: "/i/oauth2/authorize",
    token: "/2/oauth2/token",
    auth: "basic",
    pkce: "required",
    scopes: ["tweet.read", "users.read", "users.email"],
    tokenResponse: (c) =>
      Promise.resolve({
        token_type: "bearer",
        expires_in: 7200,
        access_token: c.accessToken,
        scope: c.grant.scope,
        refresh_token: rnd(),
      }),
    routes: {
      "GET /2/users/me": (_r, url, { user }, f) => {
        const fields = url.searchParams.get("user.fields") ?? "";
        if (!fields.includes("confirmed_email")) {
          f.problems.push("users/me: confirmed_email not asked");
        }
        const d: Json = {
          id: user.id,
          name: user.name,
          username: `u${user.id}`,
          profile_image_url: user.avatar ?? "https://pbs.twimg.com/p.jpg",
        };
        if (emailOf(user) && verified(user)) d.confirmed_email = emailOf(user);
        return { data: d };
      },
    },
    tokenError: {
      status: 400,
      body: {
        error: "invalid_request",
        error_description: "Value passed for the authorization code was invalid.",
      },
    },
  },
  workos: {
    authorize: "/sso/authorize",
    token: "/sso/token",
    auth: "body",
    pkce: "none",
    scopes: [],
    authorizeCheck: (q) =>
      q.get("connection") || q.get("organization") || q.get("provider")
        ? undefined
        : "one of connection, organization or provider is required",
    tokenResponse: (c) => {
      const u = c.grant.user;
      return Promise.resolve({
        access_token: c.accessToken,
        profile: {
          object: "profile",
          id: `prof_${u.id}`,
          connection_id: "conn_01E4ZCR3C56J083X43JQXF3JK5",
          connection_type: "GoogleOAuth",
          organization_id: "org_01EHWNCE74X7JSDV0X3SZ3KJNY",
          email: emailOf(u),
          first_name: given(u),
          last_name: family(u),
          idp_id: `idp-${u.id}`,
          raw_attributes: {},
        },
      });
    },
    tokenError: {
      status: 400,
      body: {
        error: "invalid_grant",
        error_description: "The code 'x' has expired or is invalid.",
      },
    },
  },
};

/** The tenant id the azure fake puts in its tokens. */
export const AZURE_TID = "9188040d-6c67-4c5b-b112-36a304b66dad";

/** The names of the fakes. */
export const FAKE_PROVIDERS = Object.keys(SPECS);

function notionPerson(u: FakeUser): Json {
  return {
    object: "user",
    id: u.id,
    name: u.name,
    avatar_url: u.avatar ?? null,
    type: "person",
    person: emailOf(u) ? { email: emailOf(u) } : {},
  };
}

function allEmails(u: FakeUser): { email: string; verified: boolean; primary: boolean }[] {
  const out = emailOf(u) ? [{ email: emailOf(u)!, verified: verified(u), primary: true }] : [];
  for (const e of u.extraEmails ?? []) out.push({ ...e, primary: false });
  return out;
}

async function atHash(token: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return jose.base64url.encode(d.slice(0, 16));
}

async function s256(verifier: string): Promise<string> {
  const d = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)),
  );
  return jose.base64url.encode(d);
}

function formDecode(s: string): string {
  return decodeURIComponent(s.replaceAll("+", " "));
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/**
 * Starts the fake of `name` (one of {@linkcode FAKE_PROVIDERS}).
 */
export async function startProviderFake(name: string, opts: FakeOptions): Promise<ProviderFake> {
  const spec = SPECS[name];
  if (!spec) throw new TypeError(`no fake for provider "${name}"`);
  const clientId = opts.clientId ?? `${name}-client-id`;
  const secret = opts.secret ?? `${name}-secret-${rnd().slice(0, 8)}`;
  const problems: string[] = [];
  const requests: string[] = [];
  const codes = new Map<string, Grant>();
  const tokens = new Map<string, IssuedToken>();
  const state: FakeState = { spec, problems, clientId, secret };
  let failNext = false;
  const { privateKey, publicKey } = await jose.generateKeyPair("RS256", { extractable: true });
  const kid = `k-${rnd().slice(0, 6)}`;
  const jwk = { ...(await jose.exportJWK(publicKey)), kid, alg: "RS256", use: "sig" };
  let origin = "";

  const fail = (what: string, status = 400) => {
    problems.push(what);
    return json({ error: "invalid_request", error_description: what }, status);
  };

  function authorize(url: URL): Response {
    const q = url.searchParams;
    if (q.get("client_id") !== clientId) return fail("authorize: unknown client_id");
    if (q.get("response_type") !== "code") return fail("authorize: response_type must be code");
    const redirectUri = q.get("redirect_uri");
    if (!redirectUri) return fail("authorize: redirect_uri missing");
    const st = q.get("state");
    if (!st) return fail("authorize: state missing");
    const scope = q.get("scope") ?? "";
    const granted = scope.split(/[ ,]+/);
    for (const s of spec.scopes) {
      if (!granted.includes(s)) return fail(`authorize: scope ${s} missing`);
    }
    const challenge = q.get("code_challenge") ?? undefined;
    if (challenge && q.get("code_challenge_method") !== "S256") {
      return fail("authorize: code_challenge_method must be S256");
    }
    if (spec.pkce === "required" && !challenge) return fail("authorize: PKCE is required");
    if (spec.pkce === "none" && challenge) return fail("authorize: this provider does not do PKCE");
    if (spec.oidc && !q.get("nonce")) return fail("authorize: nonce missing");
    const problem = spec.authorizeCheck?.(q);
    if (problem) return fail(`authorize: ${problem}`);
    if (q.get("__deny") === "1") {
      const back = new URL(redirectUri);
      back.searchParams.set("error", "access_denied");
      back.searchParams.set("error_description", "The user denied your request");
      back.searchParams.set("state", st);
      return new Response(null, { status: 302, headers: { location: back.href } });
    }
    const code = `c-${rnd()}`;
    codes.set(code, {
      redirectUri,
      challenge,
      nonce: q.get("nonce") ?? undefined,
      scope,
      user: structuredClone(fake.user),
    });
    if (spec.formPost) {
      const fields = { code, state: st };
      return new Response(
        `<html><body onload="document.forms[0].submit()"><form method="post" action="${redirectUri}">` +
          Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
            .join("") +
          `</form></body></html>`,
        { headers: { "content-type": "text/html" } },
      );
    }
    const back = new URL(redirectUri);
    back.searchParams.set("code", code);
    back.searchParams.set("state", st);
    return new Response(null, { status: 302, headers: { location: back.href } });
  }

  async function token(req: Request): Promise<Response> {
    if (req.method !== "POST") return fail("token: must be POST");
    const type = req.headers.get("content-type") ?? "";
    const text = await req.text();
    let form: URLSearchParams;
    if (spec.auth === "basic_json") {
      if (!type.startsWith("application/json")) return fail("token: body must be JSON");
      form = new URLSearchParams(Object.entries(JSON.parse(text)).map(([k, v]) => [k, String(v)]));
    } else {
      if (!type.startsWith("application/x-www-form-urlencoded")) {
        return fail("token: body must be form-encoded");
      }
      form = new URLSearchParams(text);
    }
    const header = req.headers.get("authorization") ?? "";
    if (spec.auth === "body") {
      if (header) return fail("token: credentials belong in the body");
      if (form.get("client_id") !== clientId || form.get("client_secret") !== secret) {
        return fail("token: client authentication failed", 401);
      }
    } else {
      const m = /^Basic (.+)$/.exec(header);
      if (!m) return fail("token: HTTP Basic client authentication missing", 401);
      const [id, sec] = atob(m[1]).split(":").map(formDecode);
      if (id !== clientId || sec !== secret) {
        return fail("token: client authentication failed", 401);
      }
      if (form.get("client_secret")) return fail("token: secret must not be in the body");
    }
    if (form.get("grant_type") !== "authorization_code") return fail("token: grant_type");
    const code = form.get("code") ?? "";
    const grant = codes.get(code);
    codes.delete(code);
    if (failNext || !grant) {
      failNext = false;
      return json(spec.tokenError.body, spec.tokenError.status);
    }
    if (form.get("redirect_uri") !== grant.redirectUri) return fail("token: redirect_uri differs");
    const verifier = form.get("code_verifier");
    if (grant.challenge) {
      if (!verifier || await s256(verifier) !== grant.challenge) {
        return fail("token: code_verifier does not match the challenge");
      }
    } else if (verifier) return fail("token: code_verifier without a challenge");
    const accessToken = `at-${name}-${rnd()}`;
    tokens.set(accessToken, { user: grant.user });
    const ctx: Ctx = {
      origin,
      clientId,
      secret,
      grant,
      accessToken,
      idToken: (claims) => {
        const now = Math.floor(Date.now() / 1000);
        return new jose.SignJWT({ ...claims, nonce: grant.nonce })
          .setProtectedHeader({ alg: "RS256", kid })
          .setIssuer(spec.oidc!.issuer(origin))
          .setAudience(clientId)
          .setIssuedAt(now)
          .setExpirationTime(now + 3600)
          .sign(privateKey);
      },
    };
    return json(await spec.tokenResponse(ctx));
  }

  async function handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    requests.push(`${req.method} ${url.pathname}`);
    if (url.pathname === spec.authorize && req.method === "GET") return authorize(url);
    if (url.pathname === spec.token) return await token(req);
    if (spec.oidc && url.pathname === spec.oidc.jwks) return json({ keys: [jwk] });
    const route = spec.routes?.[`${req.method} ${url.pathname}`];
    if (!route) return fail(`no route ${req.method} ${url.pathname}`, 404);
    const m = /^Bearer (.+)$/i.exec(req.headers.get("authorization") ?? "");
    const who = m ? tokens.get(m[1]) : undefined;
    if (!who) return fail(`${url.pathname}: bearer token missing or unknown`, 401);
    if (name === "facebook") {
      const proof = await hmacHex(secret, m![1]);
      if (url.searchParams.get("appsecret_proof") !== proof) {
        return fail("me: appsecret_proof missing or wrong");
      }
    }
    return json(route(req, url, who, state));
  }

  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req) => handle(req).catch((e) => fail(`fake crashed: ${e}`, 500)),
  );
  origin = `http://127.0.0.1:${server.addr.port}`;
  const base = name === "azure" ? `${origin}/common` : origin;

  async function follow(authorizeUrl: string, deny: boolean): Promise<CallbackRequest> {
    const u = new URL(authorizeUrl);
    if (!authorizeUrl.startsWith(`${origin}/`)) {
      throw new Error(`not this fake's URL: ${authorizeUrl}`);
    }
    if (deny) u.searchParams.set("__deny", "1");
    const res = await fetch(u, { redirect: "manual" });
    if (res.status === 302) {
      await res.body?.cancel();
      return { url: res.headers.get("location")!, init: { method: "GET", redirect: "manual" } };
    }
    const html = await res.text();
    if (res.status !== 200 || !spec.formPost) {
      throw new Error(`${name} fake refused the authorization: ${res.status} ${html}`);
    }
    const action = /action="([^"]+)"/.exec(html)![1];
    const body = new URLSearchParams();
    for (const m of html.matchAll(/name="([^"]+)" value="([^"]*)"/g)) body.set(m[1], m[2]);
    return {
      url: action,
      init: {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: body.toString(),
        redirect: "manual",
      },
    };
  }

  const fake: ProviderFake = {
    name,
    url: base,
    clientId,
    secret,
    user: opts.user,
    problems,
    requests,
    env(redirectUri) {
      const X = `AUTHSVC_EXTERNAL_${name.toUpperCase()}`;
      return {
        [`${X}_ENABLED`]: "true",
        [`${X}_CLIENT_ID`]: clientId,
        [`${X}_SECRET`]: secret,
        [`${X}_REDIRECT_URI`]: redirectUri,
        [`${X}_URL`]: base,
      };
    },
    async approve(authorizeUrl, o = {}) {
      const cb = await follow(authorizeUrl, false);
      if (o.postUser !== undefined && cb.init.method === "POST") {
        const body = new URLSearchParams(String(cb.init.body));
        body.set("user", JSON.stringify(o.postUser));
        cb.init.body = body.toString();
      }
      return cb;
    },
    deny: (authorizeUrl) => follow(authorizeUrl, true),
    failNextToken() {
      failNext = true;
    },
    async close() {
      ac.abort();
      await server.finished;
    },
  };
  return fake;
}

async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
  return Array.from(sig, (b) => b.toString(16).padStart(2, "0")).join("");
}
