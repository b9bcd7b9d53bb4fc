/**
 * A real OpenID Connect / OAuth 2.0 authorization server for tests:
 * `oidc-provider` (npm) on 127.0.0.1, port 0, with a small protected resource
 * beside it, plus {@linkcode driveLogin}, which completes an interactive
 * login + consent with plain `fetch` (manual redirects, a cookie jar) and
 * returns the authorization code.
 *
 * ```ts
 * await using op = await startOidcProvider({
 *   clients: [{ client_id: "app", client_secret: "s3cret", redirect_uris: ["http://127.0.0.1/cb"],
 *               grant_types: ["authorization_code", "refresh_token"] }],
 * });
 * const { code } = await op.login(authorizeUrl, { login: "alice" });
 * ```
 *
 * `oidc-provider` prints a warning about an unsupported runtime under Deno and
 * one about development signing keys: both are expected.
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { OidcProvider } from "./deps.ts";

/** Client metadata as oidc-provider takes it (RFC 7591 names). */
export interface OidcClientMetadata {
  /** The client id. */
  client_id: string;
  /** Secret for client_secret_basic / client_secret_post. */
  client_secret?: string;
  /** Registered redirect URIs (exact match). */
  redirect_uris?: string[];
  /** Default `["authorization_code"]`. */
  grant_types?: string[];
  /** Default `["code"]`, or `[]` when the client has no authorization_code grant. */
  response_types?: string[];
  /** `client_secret_basic` (default), `client_secret_post`, `private_key_jwt`, `none` ... */
  token_endpoint_auth_method?: string;
  /** Public keys for `private_key_jwt` (`{ keys: [jwk] }`). */
  jwks?: { keys: JsonWebKey[] };
  /** Space-separated scopes the client may request (client_credentials needs it). */
  scope?: string;
  /** Any other metadata oidc-provider knows. */
  [key: string]: unknown;
}

/** Options of {@linkcode startOidcProvider}. */
export interface StartOidcProviderOptions {
  /** Registered clients. */
  clients: OidcClientMetadata[];
  /** Scopes the provider knows; default openid, offline_access, profile, email, api:read, api:write. */
  scopes?: string[];
  /** Extra claims per account id, returned by the userinfo endpoint (any login is accepted). */
  accounts?: Record<string, Record<string, unknown>>;
  /** Require PKCE for every authorization code request; default true (OAuth 2.1). */
  pkceRequired?: boolean;
  /** Issue a refresh token to every client allowed the refresh_token grant; default true. */
  alwaysIssueRefreshToken?: boolean;
  /** Rotate refresh tokens on use; default false. */
  rotateRefreshToken?: boolean;
  /** Token lifetimes in seconds (AccessToken, ClientCredentials, RefreshToken ...). */
  ttl?: Record<string, number>;
  /** Path of the protected resource; default "/resource". */
  resourcePath?: string;
  /** Merged last into the oidc-provider configuration (escape hatch). */
  configuration?: Record<string, unknown>;
}

/** What a completed login gives back. */
export interface LoginResult {
  /** The authorization code. */
  code: string;
  /** The `state` returned on the callback, if any. */
  state: string | null;
  /** The full callback URL the provider redirected to. */
  callbackUrl: string;
  /** All parameters of the callback (query, or fragment for implicit-style flows). */
  params: URLSearchParams;
}

/** Options of {@linkcode driveLogin}. */
export interface DriveLoginOptions {
  /** Value for the login/username field; default "alice". */
  login?: string;
  /** Value for the password field; default "secret". */
  password?: string;
  /** Stop when a redirect goes here (prefix match on the URL); default: the authorize URL's `redirect_uri`. */
  redirectUri?: string;
  /** Names tried for the login field; default ["login", "username", "email"]. */
  loginFields?: string[];
  /** Extra form fields set on every submitted form. */
  extraFields?: Record<string, string>;
  /** Maximum number of HTTP requests; default 20. */
  maxSteps?: number;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** A running provider. */
export interface OidcProviderHandle {
  /** The issuer, `http://127.0.0.1:<port>`. */
  issuer: string;
  /** The TCP port. */
  port: number;
  /** The oidc-provider instance (its models: `provider.AccessToken.find(...)` ...). */
  provider: InstanceType<typeof OidcProvider>;
  /** Endpoint URLs. */
  endpoints: {
    authorization: string;
    token: string;
    userinfo: string;
    revocation: string;
    introspection: string;
    jwks: string;
    discovery: string;
    /** The protected resource: answers 200 `{ sub, client_id, scope }` for a valid token, else 401. */
    resource: string;
  };
  /** {@linkcode driveLogin} against this provider. */
  login(authorizeUrl: string, options?: DriveLoginOptions): Promise<LoginResult>;
  /** Stops the server and closes every connection. */
  close(): Promise<void>;
  /** Same as `close`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

const DEFAULT_SCOPES = ["openid", "offline_access", "profile", "email", "api:read", "api:write"];

/**
 * Starts oidc-provider on 127.0.0.1 (port 0) with the given clients. Features
 * on: authorization code (+ PKCE), refresh tokens, client credentials,
 * revocation, introspection, userinfo, dev login/consent pages, and a
 * protected resource at `endpoints.resource`.
 */
export async function startOidcProvider(
  options: StartOidcProviderOptions,
): Promise<OidcProviderHandle> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const accounts = options.accounts ?? {};
  const resourcePath = options.resourcePath ?? "/resource";

  const clients = options.clients.map((c) => {
    const grants = c.grant_types ?? ["authorization_code"];
    return {
      grant_types: grants,
      response_types: grants.includes("authorization_code") ? ["code"] : [],
      redirect_uris: grants.includes("authorization_code") ? ["http://127.0.0.1/callback"] : [],
      ...c,
    };
  });
  const provider = new OidcProvider(issuer, {
    clients,
    scopes: options.scopes ?? DEFAULT_SCOPES,
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    cookies: { keys: ["test-cookie-key-1", "test-cookie-key-2"] },
    pkce: { required: () => options.pkceRequired ?? true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      revocation: { enabled: true, allowedPolicy: () => true },
      introspection: { enabled: true },
      userinfo: { enabled: true },
    },
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(g: string): boolean }) =>
      (options.alwaysIssueRefreshToken ?? true) && client.grantTypeAllowed("refresh_token"),
    rotateRefreshToken: options.rotateRefreshToken ?? false,
    ttl: {
      AccessToken: 3600,
      ClientCredentials: 3600,
      RefreshToken: 86400,
      IdToken: 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 86400,
      AuthorizationCode: 60,
      ...options.ttl,
    },
    findAccount: (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.test`, name: sub, ...accounts[sub] }),
    }),
    ...options.configuration,
  });
  const callback = provider.callback();
  handler = (req, res) => {
    if (new URL(req.url ?? "/", issuer).pathname === resourcePath) {
      serveResource(provider, req, res).catch((err) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    callback(req, res);
  };

  const endpoints = {
    authorization: `${issuer}/auth`,
    token: `${issuer}/token`,
    userinfo: `${issuer}/me`,
    revocation: `${issuer}/token/revocation`,
    introspection: `${issuer}/token/introspection`,
    jwks: `${issuer}/jwks`,
    discovery: `${issuer}/.well-known/openid-configuration`,
    resource: `${issuer}${resourcePath}`,
  };
  const close = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return {
    issuer,
    port,
    provider,
    endpoints,
    login: (url, opts) => driveLogin(url, opts),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Finds the token of a request (header, query or form body) the way RFC 6750 allows. */
async function serveResource(
  provider: InstanceType<typeof OidcProvider>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  let body = "";
  const decoder = new TextDecoder();
  for await (const chunk of req) body += decoder.decode(chunk as Uint8Array, { stream: true });
  body += decoder.decode();
  const url = new URL(req.url ?? "/", "http://x");
  const header = req.headers.authorization ?? "";
  const token = /^Bearer\s+(.+)$/i.exec(header)?.[1] ?? url.searchParams.get("access_token") ??
    (String(req.headers["content-type"]).includes("form")
      ? new URLSearchParams(body).get("access_token")
      : null);
  const send = (status: number, json: unknown) => {
    res.statusCode = status;
    res.setHeader("content-type", "application/json");
    if (status === 401) res.setHeader("www-authenticate", 'Bearer error="invalid_token"');
    res.end(JSON.stringify(json));
  };
  if (!token) return send(401, { error: "invalid_token", error_description: "no token" });
  const found = await provider.AccessToken.find(token) ??
    await provider.ClientCredentials.find(token);
  if (!found || found.isExpired) {
    return send(401, { error: "invalid_token", error_description: "unknown or expired token" });
  }
  send(200, {
    sub: found.accountId ?? null,
    client_id: found.clientId,
    scope: found.scope ?? null,
    method: req.method,
  });
}

/** A minimal cookie jar: name, value, path; expired cookies are dropped. */
export class CookieJar {
  #cookies = new Map<string, { name: string; value: string; path: string }>();

  /** Stores the `Set-Cookie` headers of `response` (received from `url`). */
  store(url: URL, response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";").map((s) => s.trim());
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = url.pathname.replace(/\/[^/]*$/, "") || "/";
      let expired = value === "";
      for (const attr of attrs) {
        const [k, v = ""] = attr.split("=");
        if (k.toLowerCase() === "path") path = v || "/";
        if (k.toLowerCase() === "max-age" && Number(v) <= 0) expired = true;
        if (k.toLowerCase() === "expires" && Date.parse(v) < Date.now()) expired = true;
      }
      const key = `${name};${path}`;
      if (expired) this.#cookies.delete(key);
      else this.#cookies.set(key, { name, value, path });
    }
  }

  /** The `Cookie` header for `url` (longest paths first), or null. */
  header(url: URL): string | null {
    const matching = [...this.#cookies.values()]
      .filter((c) =>
        url.pathname === c.path || url.pathname.startsWith(c.path.replace(/\/?$/, "/"))
      )
      .sort((a, b) => b.path.length - a.path.length);
    return matching.length ? matching.map((c) => `${c.name}=${c.value}`).join("; ") : null;
  }
}

interface HtmlForm {
  action: string;
  method: string;
  fields: Map<string, string>;
  /** Names of the text-like inputs (where a login may go), not buttons or hidden fields. */
  textInputs: Set<string>;
}

function decodeEntities(text: string): string {
  return text.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&#39;|&#x27;/g, "'")
    .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#x2F;/g, "/");
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)'|([^\\s>]+))`, "i").exec(tag);
  return m ? decodeEntities(m[2] ?? m[3] ?? m[4] ?? "") : undefined;
}

/** The first form of an HTML page with its named input values (GET and POST forms). */
function firstForm(html: string): HtmlForm | null {
  const m = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!m) return null;
  const fields = new Map<string, string>();
  const textInputs = new Set<string>();
  for (const input of m[2].matchAll(/<(input|button)\b[^>]*>/gi)) {
    const name = attr(input[0], "name");
    const type = (attr(input[0], "type") ?? "").toLowerCase();
    if (name && input[1].toLowerCase() === "input" && ["", "text", "email"].includes(type)) {
      textInputs.add(name);
    }
    if (!name || (input[1].toLowerCase() === "button" && !attr(input[0], "value"))) continue;
    if ((type === "checkbox" || type === "radio") && !/\schecked/i.test(input[0])) continue;
    fields.set(name, attr(input[0], "value") ?? "");
  }
  return {
    action: attr(m[1], "action") ?? "",
    method: (attr(m[1], "method") ?? "get").toUpperCase(),
    fields,
    textInputs,
  };
}

/**
 * Completes an interactive authorization in the way a browser would, with
 * plain fetch: follows redirects by hand, keeps cookies, submits each HTML
 * form it meets (the login form with `login`/`password`, then the consent
 * form) until the provider redirects to the redirect URI, and returns the
 * code. Works with oidc-provider's dev pages and with simple login pages of
 * other providers (Keycloak's `username`/`password` form).
 *
 * @param authorizeUrl the URL from `client.authCode.authorizeUrl(...)`
 * @param options credentials and where to stop
 * @returns the code, the state and the callback URL
 * @throws {Error} naming the step when the provider answers with an error or no form
 */
export async function driveLogin(
  authorizeUrl: string,
  options: DriveLoginOptions = {},
): Promise<LoginResult> {
  const doFetch = options.fetch ?? fetch;
  const redirectUri = options.redirectUri ??
    new URL(authorizeUrl).searchParams.get("redirect_uri") ?? undefined;
  if (!redirectUri) {
    throw new TypeError(`driveLogin: no "redirectUri" and none in the authorize URL`);
  }
  const loginFields = options.loginFields ?? ["login", "username", "email"];
  const jar = new CookieJar();
  let url = new URL(authorizeUrl);
  let init: { method: string; body?: string } = { method: "GET" };
  for (let step = 0; step < (options.maxSteps ?? 20); step++) {
    const headers = new Headers({ accept: "text/html" });
    const cookie = jar.header(url);
    if (cookie) headers.set("cookie", cookie);
    if (init.body !== undefined) headers.set("content-type", "application/x-www-form-urlencoded");
    const res = await doFetch(url, { ...init, headers, redirect: "manual" });
    jar.store(url, res);
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      const next = new URL(location, url);
      if (next.href.startsWith(redirectUri)) return callbackResult(next);
      url = next;
      init = { method: "GET" };
      continue;
    }
    const html = await res.text();
    if (res.status >= 400) {
      throw new Error(
        `driveLogin: ${init.method} ${url.pathname} answered ${res.status}: ${html.slice(0, 300)}`,
      );
    }
    const form = firstForm(html);
    if (!form) throw new Error(`driveLogin: no form at ${url.pathname}: ${html.slice(0, 300)}`);
    for (const name of form.fields.keys()) {
      if (loginFields.includes(name) && form.textInputs.has(name)) {
        form.fields.set(name, options.login ?? "alice");
      }
      if (name === "password") form.fields.set(name, options.password ?? "secret");
    }
    const hasPasswordInput = /<input\b[^>]*type=["']?password/i.test(html);
    if (hasPasswordInput && !form.fields.has("password")) {
      form.fields.set("password", options.password ?? "secret");
    }
    for (const [k, v] of Object.entries(options.extraFields ?? {})) form.fields.set(k, v);
    const action = new URL(form.action || url.href, url);
    const body = new URLSearchParams([...form.fields]).toString();
    if (form.method === "POST") {
      url = action;
      init = { method: "POST", body };
    } else {
      action.search = body;
      url = action;
      init = { method: "GET" };
    }
  }
  throw new Error(
    `driveLogin: no redirect to ${redirectUri} within ${options.maxSteps ?? 20} steps`,
  );
}

function callbackResult(url: URL): LoginResult {
  const params = url.search.length > 1
    ? url.searchParams
    : new URLSearchParams(url.hash.replace(/^#/, ""));
  const error = params.get("error");
  if (error) {
    throw new Error(
      `driveLogin: the provider redirected with ${error}: ${params.get("error_description")}`,
    );
  }
  const code = params.get("code");
  if (!code) throw new Error(`driveLogin: the callback has no code: ${url.href}`);
  return { code, state: params.get("state"), callbackUrl: url.href, params };
}
