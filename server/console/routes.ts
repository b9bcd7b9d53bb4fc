/**
 * The operators' web console under /console/ (docs/console.md), off unless
 * AUTHSVC_CONSOLE_ENABLED=true.
 *
 * The page is static (server/console/assets, served from memory) and talks to
 * /console/api/*. Sign-in goes through the server's own password grant and,
 * when the account has a verified factor, its MFA challenge and verify; only
 * accounts whose role is in JWT_ADMIN_ROLES get in. The tokens stay in
 * HttpOnly, SameSite=Strict cookies (Secure except on localhost), never in
 * the page. Every action is a request to the admin API (or /invite, /recover,
 * /magiclink, /resend) made on the operator's behalf with their token, so
 * the admin API's checks and audit entries apply unchanged.
 *
 * Cross-origin requests: SameSite=Strict keeps the cookies off cross-site
 * ones (but not off a sibling subdomain's), the API answers no CORS headers
 * under /console/ (api/cors.ts), and every call to /console/api/, reads
 * included, must carry the CSRF cookie's value in the X-CSRF-Token header
 * (double submit) and, when the browser sends Origin (or a Sec-Fetch-Site
 * other than same-origin), come from this server's own origin.
 */
import type { Hono } from "../../deps.ts";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppEnv, Ctx } from "../api/context.ts";
import { bodyReadFailure, readBody } from "../api/input.ts";
import type { Services } from "../services.ts";
import type { ConsoleFigures } from "./figures.ts";
import { checkHooks, type SampleUser } from "../auth/hook_check.ts";
import { cookieOpts, fail, pass, payloadOf, randomToken, sameString, tokenOf } from "./http.ts";

const AT = "authsvc_console_at";
const RT = "authsvc_console_rt";
const MFA = "authsvc_console_mfa";
const CSRF = "authsvc_console_csrf";

/** The policy of every console response: nothing but this server's own files. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

const ASSET_TYPES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "icon.svg": "image/svg+xml",
};

/** Paths of the API the console may call for the operator, and with which methods. */
const FORWARDED: [RegExp, string[]][] = [
  [/^admin\/users$/, ["GET", "POST"]],
  [/^admin\/users\/[0-9a-f-]{36}$/, ["GET", "PUT", "DELETE"]],
  [/^admin\/users\/[0-9a-f-]{36}\/(factors|sessions)$/, ["GET", "DELETE"]],
  [/^admin\/users\/[0-9a-f-]{36}\/factors\/[0-9a-f-]{36}$/, ["DELETE"]],
  [/^admin\/audit$/, ["GET"]],
  [/^(invite|recover|magiclink|resend)$/, ["POST"]],
];

/** Response headers of the API worth passing to the page. */
const PASSED_HEADERS = ["content-type", "x-total-count", "x-next-cursor", "retry-after"];

/**
 * Request headers passed on to the API: who the caller is, as the server sees them. Besides the
 * user agent, only the headers the settings name: the proxy's client-IP header
 * (SECURITY_SB_FORWARDED_FOR_ENABLED) and RATE_LIMIT_HEADER, so the operator's calls count
 * against the operator's own limits and carry their address into the audit log.
 */
function callerHeaders(config: Services["config"]): string[] {
  const names = ["user-agent", config.security.forwardedForHeader, config.rateLimit.header];
  return [...new Set(names.filter(Boolean).map((h) => h.toLowerCase()))];
}

async function loadAssets(): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const name of Object.keys(ASSET_TYPES)) {
    out.set(name, await Deno.readFile(new URL(`./assets/${name}`, import.meta.url)));
  }
  return out;
}

interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user?: { id: string; email?: string; role?: string; factors?: Factor[] };
}

interface Factor {
  id: string;
  factor_type: string;
  friendly_name?: string;
  status: string;
}

/**
 * The console's routes: method, path and handler, registered in this order
 * (after the middleware of every console response). The fuzz suite has an
 * entry for each row (tests/fuzz/console_routes.ts; tests/fuzz/fuzz_test.ts
 * fails on a row without one).
 */
export const CONSOLE_ROUTES = [
  ["GET", "/console", "toPage"],
  ["GET", "/console/", "page"],
  ["GET", "/console/assets/:name", "asset"],
  ["POST", "/console/api/login", "login"],
  ["POST", "/console/api/mfa/challenge", "mfaChallenge"],
  ["POST", "/console/api/mfa/verify", "mfaVerify"],
  ["POST", "/console/api/logout", "logout"],
  ["GET", "/console/api/me", "me"],
  ["GET", "/console/api/figures", "activity"],
  ["GET", "/console/api/inbox", "inbox"],
  ["POST", "/console/api/hooks/check", "hooksCheck"],
  ["ALL", "/console/api/gotrue/*", "forward"],
] as const;

type ConsoleHandler = typeof CONSOLE_ROUTES[number][2];

/** Registers the console's routes when it is enabled. */
export async function consoleRoutes(
  app: Hono<AppEnv>,
  s: Services,
  figures: ConsoleFigures,
): Promise<void> {
  if (!s.config.console.enabled) return;
  const assets = await loadAssets();
  const adminRoles = s.config.jwt.adminRoles;
  const passOn = callerHeaders(s.config);

  /** A request to this server's own API, as the caller of `c`. */
  const self = (
    c: Ctx,
    method: string,
    path: string,
    opts: {
      token?: string;
      body?: string | Uint8Array<ArrayBuffer>;
      contentType?: string;
      signIn?: boolean;
    } = {},
  ) => {
    const headers = new Headers();
    for (const h of passOn) {
      const v = c.req.header(h);
      if (v) headers.set(h, v);
    }
    if (opts.token) headers.set("authorization", `Bearer ${opts.token}`);
    if (opts.body !== undefined) {
      headers.set("content-type", opts.contentType ?? "application/json");
    }
    const url = new URL(path, new URL(c.req.url).origin);
    const env = opts.signIn ? { ...c.env, signInRoles: adminRoles } : c.env;
    return app.fetch(new Request(url, { method, headers, body: opts.body }), env);
  };

  const setSession = (c: Ctx, t: TokenAnswer) => {
    setCookie(c, AT, t.access_token, cookieOpts(c, t.expires_in));
    setCookie(c, RT, t.refresh_token, cookieOpts(c, 12 * 3600));
    if (getCookie(c, MFA)) deleteCookie(c, MFA, cookieOpts(c));
  };

  const endSession = (c: Ctx) => {
    for (const name of [AT, RT, MFA]) if (getCookie(c, name)) deleteCookie(c, name, cookieOpts(c));
  };

  /** The operator's access token, refreshed when it has (nearly) expired; null when signed out. */
  const accessToken = async (c: Ctx): Promise<string | null> => {
    const at = tokenOf(getCookie(c, AT));
    const exp = at ? Number(payloadOf(at).exp) : 0;
    if (at && exp * 1000 - 10_000 > s.clock.now().getTime()) return at;
    const rt = tokenOf(getCookie(c, RT));
    if (!rt) return null;
    const res = await self(c, "POST", "/token?grant_type=refresh_token", {
      body: JSON.stringify({ refresh_token: rt }),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      endSession(c);
      return null;
    }
    const t = await res.json() as TokenAnswer;
    setSession(c, t);
    return t.access_token;
  };

  /** The signed-in operator (GET /user answers for them), or null. */
  const operator = async (c: Ctx): Promise<{ token: string; user: TokenAnswer["user"] } | null> => {
    const token = await accessToken(c);
    if (!token) return null;
    const res = await self(c, "GET", "/user", { token });
    if (res.status !== 200) {
      await res.body?.cancel();
      endSession(c);
      return null;
    }
    const user = await res.json() as TokenAnswer["user"];
    if (!adminRoles.includes(String(payloadOf(token).role))) return null;
    return { token, user };
  };

  const signedOut = (c: Ctx) => fail(c, 401, "no_authorization", "Sign in to the console first");

  // Headers of every console response.
  app.use("/console/*", async (c, next) => {
    await next();
    c.header("Content-Security-Policy", CONSOLE_CSP);
    c.header("X-Frame-Options", "DENY");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "no-referrer");
    c.header("Cross-Origin-Opener-Policy", "same-origin");
    if (c.req.path.startsWith("/console/api/")) c.header("Cache-Control", "no-store");
  });

  // Every API call, reads too: the CSRF token and, when given, this server's own origin. A
  // sibling subdomain is the same site, so SameSite=Strict sends it the cookies; it cannot read
  // the (host-only) CSRF cookie, and no CORS header lets it read an answer (api/cors.ts).
  app.use("/console/api/*", async (c, next) => {
    const cookie = getCookie(c, CSRF) ?? "";
    const header = c.req.header("x-csrf-token") ?? "";
    if (!sameString(cookie, header)) {
      return fail(c, 403, "csrf_failed", "Missing or wrong X-CSRF-Token (reload the console)");
    }
    const origin = c.req.header("origin");
    const site = c.req.header("sec-fetch-site");
    if (origin !== undefined || (site !== undefined && site !== "same-origin")) {
      let host = "";
      try {
        host = new URL(origin ?? "").host;
      } catch { /* "null", garbage or none: refused below */ }
      if (host !== (c.req.header("host") ?? new URL(c.req.url).host)) {
        return fail(c, 403, "csrf_failed", "Cross-origin request refused");
      }
    }
    await next();
  });

  const page = (c: Ctx) => {
    if (!getCookie(c, CSRF)) {
      setCookie(c, CSRF, randomToken(), { ...cookieOpts(c), httpOnly: false });
    }
    return c.body(assets.get("index.html")!.slice(), 200, {
      "content-type": ASSET_TYPES["index.html"],
      "cache-control": "no-store",
    });
  };
  const toPage = (c: Ctx) => c.redirect("/console/", 301);

  const asset = (c: Ctx) => {
    const name = c.req.param("name") ?? "";
    const body = Object.hasOwn(ASSET_TYPES, name) ? assets.get(name) : undefined;
    if (!body || name === "index.html") return fail(c, 404, "not_found", "No such console file");
    return c.body(body.slice(), 200, {
      "content-type": ASSET_TYPES[name],
      "cache-control": "no-cache",
    });
  };

  const login = async (c: Ctx) => {
    const input = await readBody(c);
    if (typeof input.email !== "string" || typeof input.password !== "string") {
      return fail(c, 400, "validation_failed", "email and password are required");
    }
    // Only an account of an admin role gets a session (api/token.ts); anyone else gets
    // 403 not_admin from the grant, counted as a failed attempt, not as a sign-in.
    const res = await self(c, "POST", "/token?grant_type=password", {
      body: JSON.stringify({ email: input.email, password: input.password }),
      signIn: true,
    });
    if (res.status !== 200) return pass(c, res);
    const t = await res.json() as TokenAnswer;
    if (!adminRoles.includes(String(payloadOf(t.access_token).role))) {
      // The account's role admits it, its token's (an access-token hook's claims) does not.
      const out = await self(c, "POST", "/logout?scope=local", { token: t.access_token });
      await out.body?.cancel();
      return fail(c, 403, "not_admin", "This account may not use the console");
    }
    const factors = (t.user?.factors ?? []).filter((f) => f.status === "verified");
    if (factors.length > 0 && payloadOf(t.access_token).aal !== "aal2") {
      // Half signed in: the tokens wait in their own cookie until a factor is verified.
      setCookie(c, MFA, `${t.access_token} ${t.refresh_token}`, cookieOpts(c, 600));
      return c.json({
        mfa_required: true,
        factors: factors.map((f) => ({
          id: f.id,
          factor_type: f.factor_type,
          friendly_name: f.friendly_name ?? "",
        })),
      });
    }
    setSession(c, t);
    return c.json({ mfa_required: false, user: { id: t.user?.id, email: t.user?.email } });
  };

  const pendingToken = (c: Ctx) => tokenOf((getCookie(c, MFA) ?? "").split(" ")[0]);

  const mfaChallenge = async (c: Ctx) => {
    const token = pendingToken(c);
    if (!token) return signedOut(c);
    const { factor_id } = await readBody(c);
    if (typeof factor_id !== "string" || !/^[0-9a-f-]{36}$/.test(factor_id)) {
      return fail(c, 400, "validation_failed", "factor_id must be a factor's id");
    }
    const res = await self(c, "POST", `/factors/${factor_id}/challenge`, { token, body: "{}" });
    return pass(c, res);
  };

  const mfaVerify = async (c: Ctx) => {
    const token = pendingToken(c);
    if (!token) return signedOut(c);
    const { factor_id, challenge_id, code } = await readBody(c);
    if (
      typeof factor_id !== "string" || !/^[0-9a-f-]{36}$/.test(factor_id) ||
      typeof challenge_id !== "string" || typeof code !== "string"
    ) {
      return fail(c, 400, "validation_failed", "factor_id, challenge_id and code are required");
    }
    const res = await self(c, "POST", `/factors/${factor_id}/verify`, {
      token,
      body: JSON.stringify({ challenge_id, code }),
    });
    if (res.status !== 200) return pass(c, res);
    const t = await res.json() as TokenAnswer;
    setSession(c, t);
    return c.json({ mfa_required: false, user: { id: t.user?.id, email: t.user?.email } });
  };

  const logout = async (c: Ctx) => {
    const token = await accessToken(c);
    if (token) {
      const res = await self(c, "POST", "/logout?scope=local", { token });
      await res.body?.cancel();
    }
    endSession(c);
    return c.json({});
  };

  const me = async (c: Ctx) => {
    const op = await operator(c);
    if (!op) return signedOut(c);
    return c.json({
      id: op.user?.id,
      email: op.user?.email,
      inbox: s.mailer.inbox !== null,
    });
  };

  const activity = async (c: Ctx) => {
    if (!await operator(c)) return signedOut(c);
    return c.json({ minutes: await figures.lastHour() });
  };

  const inbox = async (c: Ctx) => {
    if (!await operator(c)) return signedOut(c);
    const mails = s.mailer.inbox;
    if (!mails) {
      return fail(c, 404, "not_found", "The development inbox exists only when SMTP_HOST is unset");
    }
    return c.json({ mails: mails.list() });
  };

  // A sample payload to each enabled hook, about the operator (auth/hook_check.ts).
  const hooksCheck = async (c: Ctx) => {
    const op = await operator(c);
    if (!op?.user) return signedOut(c);
    return c.json({ hooks: await checkHooks(s.hooks, op.user as SampleUser) });
  };

  // The API, on the operator's behalf.
  const forward = async (c: Ctx) => {
    const url = new URL(c.req.url);
    const rest = url.pathname.slice("/console/api/gotrue/".length);
    const rule = FORWARDED.find(([re]) => re.test(rest));
    if (!rule || !rule[1].includes(c.req.method)) {
      return fail(c, 404, "not_found", `The console does not forward ${c.req.method} /${rest}`);
    }
    const token = await accessToken(c);
    if (!token) return signedOut(c);
    // The bytes as sent: the API refuses what it refuses (invalid UTF-8, NUL, a non-object),
    // where decoding here would have turned invalid UTF-8 into U+FFFD first.
    let body: Uint8Array<ArrayBuffer> | undefined;
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      try {
        body = new Uint8Array(await c.req.arrayBuffer());
      } catch (e) {
        throw bodyReadFailure(e);
      }
    }
    const res = await self(c, c.req.method, `/${rest}${url.search}`, { token, body });
    return pass(c, res, PASSED_HEADERS);
  };

  const handlers: Record<ConsoleHandler, (c: Ctx) => Response | Promise<Response>> = {
    toPage,
    page,
    asset,
    login,
    mfaChallenge,
    mfaVerify,
    logout,
    me,
    activity,
    inbox,
    hooksCheck,
    forward,
  };
  for (const [method, path, name] of CONSOLE_ROUTES) {
    if (method === "ALL") app.all(path, handlers[name]);
    else app.on(method, path, handlers[name]);
  }
}
