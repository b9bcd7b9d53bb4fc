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
 * for that base, the client id as audience and the nonce of the request
 * (LinkedIn's carry none: it ignores the parameter).
 * @module
 */
import { jose } from "../../deps.ts";
import {
  type Ctx,
  type FakeState,
  type FakeUser,
  type Grant,
  type IssuedToken,
  rnd,
  SPECS,
} from "./provider_fake_specs.ts";

export { AZURE_TID, FAKE_PROVIDERS, type FakeUser } from "./provider_fake_specs.ts";

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
  /** From now on, the user-info endpoints refuse every token with 401. */
  refuseTokens(): void;
  close(): Promise<void>;
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
  /** The redirect URIs registered for the client (through `env`). */
  const registered = new Set<string>();
  /** User-info endpoints refuse every token (refuseTokens). */
  let refusing = false;
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
    // Providers send the browser back only to a redirect URI registered for the client.
    if (registered.size && !registered.has(redirectUri)) {
      return fail(`authorize: redirect_uri ${redirectUri} is not registered`);
    }
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
    if (spec.oidc && spec.oidc.nonce !== false && !q.get("nonce")) {
      return fail("authorize: nonce missing");
    }
    const problem = spec.authorizeCheck?.(q);
    if (problem) return fail(`authorize: ${problem}`);
    if (q.get("__deny") === "1") {
      // Apple posts a cancelled sign-in back like a consent: error and state, no description.
      if (spec.formPost) {
        return formPost(redirectUri, { error: "user_cancelled_authorize", state: st });
      }
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
      nonce: spec.oidc?.nonce === false ? undefined : q.get("nonce") ?? undefined,
      scope,
      user: structuredClone(fake.user),
    });
    if (spec.formPost) return formPost(redirectUri, { code, state: st });
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
        return new jose.SignJWT({ ...claims, ...(grant.nonce ? { nonce: grant.nonce } : {}) })
          .setProtectedHeader({ alg: "RS256", kid })
          .setIssuer(spec.oidc!.issuer(origin))
          .setAudience(clientId)
          .setIssuedAt(now)
          .setExpirationTime(now + 3600)
          .sign(privateKey);
      },
    };
    const answer = await spec.tokenResponse(ctx);
    if (spec.formUnlessJson && !(req.headers.get("accept") ?? "").includes("application/json")) {
      // GitHub's default answer is form-encoded; JSON only for Accept: application/json.
      const form = new URLSearchParams(Object.entries(answer).map(([k, v]) => [k, String(v)]));
      return new Response(form.toString(), {
        headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" },
      });
    }
    return json(answer);
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
    const who = m && !refusing ? tokens.get(m[1]) : undefined;
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
      registered.add(redirectUri);
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
    refuseTokens() {
      refusing = true;
    },
    async close() {
      ac.abort();
      await server.finished;
    },
  };
  return fake;
}

/** The self-submitting form of `response_mode=form_post`. */
function formPost(action: string, fields: Record<string, string>): Response {
  return new Response(
    `<html><body onload="document.forms[0].submit()"><form method="post" action="${action}">` +
      Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
        .join("") +
      `</form></body></html>`,
    { headers: { "content-type": "text/html" } },
  );
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
