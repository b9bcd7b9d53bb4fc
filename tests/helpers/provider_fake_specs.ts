/**
 * The provider fakes' behaviour, one entry per provider: paths, client
 * authentication, PKCE, required scopes and parameters, and the response
 * shapes of each provider's documentation (see provider_fakes.ts).
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

export type Json = Record<string, unknown>;

export interface Grant {
  redirectUri: string;
  challenge?: string;
  nonce?: string;
  scope: string;
  user: FakeUser;
}

export interface IssuedToken {
  user: FakeUser;
}

export interface Ctx {
  origin: string;
  clientId: string;
  secret: string;
  grant: Grant;
  accessToken: string;
  idToken(extra: Json): Promise<string>;
}

export type Route = (req: Request, url: URL, who: IssuedToken, f: FakeState) => Json | unknown[];

/** How one provider behaves. */
export interface FakeSpec {
  authorize: string;
  token: string;
  /** basic: Authorization Basic; body: client_id + client_secret in the form; basic_json: Basic + JSON body. */
  auth: "basic" | "body" | "basic_json";
  pkce: "required" | "optional" | "none";
  scopes: string[];
  /** Extra checks of the authorization request; returns a problem or undefined. */
  authorizeCheck?: (q: URLSearchParams) => string | undefined;
  formPost?: boolean;
  /** The token answer is form-encoded unless the request accepts JSON (GitHub). */
  formUnlessJson?: boolean;
  /** `nonce: false`: the provider ignores the nonce parameter and its ID tokens carry none. */
  oidc?: { issuer: (origin: string) => string; jwks: string; nonce?: false };
  tokenResponse(ctx: Ctx): Promise<Json>;
  /** "GET /path" → handler. */
  routes?: Record<string, Route>;
  /** A token error body (status 400 unless `status`). */
  tokenError: { status: number; body: Json };
}

export interface FakeState {
  spec: FakeSpec;
  problems: string[];
  clientId: string;
  secret: string;
}

const emailOf = (u: FakeUser) => u.email;
const verified = (u: FakeUser) => u.emailVerified !== false;
export const rnd = () => crypto.randomUUID().replaceAll("-", "");

function given(u: FakeUser): string {
  return (u.name ?? "Test User").split(" ")[0];
}
function family(u: FakeUser): string {
  return (u.name ?? "Test User").split(" ").slice(1).join(" ") || "User";
}

const STD_ERROR = { status: 400, body: { error: "invalid_grant", error_description: "bad code" } };

/** The fakes by provider name (all but keycloak, which runs on oidc-provider). */
export const SPECS: Record<string, FakeSpec> = {
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
    formUnlessJson: true,
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
    oidc: { issuer: (o) => `${o}/oauth`, jwks: "/oauth/openid/jwks", nonce: false },
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
