/**
 * Abuse protection by route, as middleware (so the endpoint files stay about
 * their endpoints): the per-client request limits, then the captcha.
 *
 * | route                         | limits                         | captcha            |
 * |-------------------------------|--------------------------------|--------------------|
 * | POST /token                   | token (RATE_LIMIT_TOKEN_REFRESH) | grant_type=password (query or body) |
 * | GET/POST /verify              | verify                         |                    |
 * | POST /otp, POST /magiclink    | otp                            | yes                |
 * | POST /signup                  | signup; anonymous when the body has no email and no phone | yes |
 * | POST /recover, POST /resend   |                                | yes                |
 *
 * Hono keeps the body it read, so reading it here and again in the handler
 * works (tested). A caller with an admin bearer token skips the captcha, as in
 * GoTrue.
 */
import type { MiddlewareHandler } from "../../deps.ts";
import type { AppEnv, Ctx } from "../api/context.ts";
import { type Body, readBody } from "../api/input.ts";
import type { Services } from "../services.ts";
import { captchaTokenOf, verifyCaptcha } from "./captcha.ts";
import { type LimitName, overRequestRateLimit, RateLimiter } from "./rate_limit.ts";

interface Plan {
  limits: LimitName[];
  captcha: boolean;
  /** POST /signup: the anonymous limit applies to bodies without email and phone. */
  signup: boolean;
  /** POST /token without grant_type in the query: the captcha applies when the body's is password. */
  grantInBody?: boolean;
}

/** What protects one request, or undefined. */
export function planFor(
  method: string,
  path: string,
  grantType: string | undefined,
): Plan | undefined {
  const p = path.length > 1 ? path.replace(/\/+$/, "") : path;
  if (method === "POST") {
    switch (p) {
      case "/token":
        // The grant type may also come in the body (token.ts reads both): undefined here
        // means "look in the body", so moving it there does not skip the captcha.
        return {
          limits: ["token"],
          captcha: grantType === undefined || grantType === "password",
          signup: false,
          grantInBody: grantType === undefined,
        };
      case "/verify":
        return { limits: ["verify"], captcha: false, signup: false };
      case "/otp":
      case "/magiclink":
        return { limits: ["otp"], captcha: true, signup: false };
      case "/signup":
        return { limits: ["signup"], captcha: true, signup: true };
      case "/recover":
      case "/resend":
        return { limits: [], captcha: true, signup: false };
    }
  }
  if (method === "GET" && p === "/verify") {
    return { limits: ["verify"], captcha: false, signup: false };
  }
  return undefined;
}

function isAnonymousSignup(body: Body): boolean {
  const has = (v: unknown) => typeof v === "string" && v.trim() !== "";
  return !has(body.email) && !has(body.phone);
}

async function callerIsAdmin(c: Ctx, s: Services): Promise<boolean> {
  const m = /^bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
  if (!m) return false;
  try {
    const claims = await s.jwt.verify(m[1]);
    return typeof claims.role === "string" && s.config.jwt.adminRoles.includes(claims.role);
  } catch {
    return false;
  }
}

/** The rate-limit key: the RATE_LIMIT_HEADER value when set and sent, else the client IP. */
export function rateKey(c: Ctx, s: Services): string {
  const h = s.config.rateLimit.header;
  const v = h ? c.req.header(h)?.trim() : undefined;
  return v ? `h:${v.slice(0, 200)}` : `ip:${c.get("clientIp") || "unknown"}`;
}

/** Builds the abuse-protection middleware of one server. */
export function abuseProtection(s: Services): MiddlewareHandler<AppEnv> {
  const limiter = new RateLimiter(s.config, s.db, s.clock);
  const captcha = s.config.security.captcha;
  return async (c, next) => {
    const method = c.req.method;
    // Only POST and GET requests are ever protected, and only POST /token reads grant_type:
    // every other request skips the query-string parse.
    if (method !== "POST" && method !== "GET") return await next();
    const plan = planFor(
      method,
      c.req.path,
      method === "POST" ? c.req.query("grant_type") : undefined,
    );
    if (!plan) return await next();
    const key = rateKey(c, s);
    for (const name of plan.limits) {
      const hit = await limiter.hit(name, key);
      if (!hit.allowed) throw overRequestRateLimit(hit.retryAfterSec);
    }
    const needCaptcha = captcha.enabled && plan.captcha;
    if (!plan.signup && !needCaptcha) return await next();
    const body = await readBody(c);
    if (plan.grantInBody && body.grant_type !== "password") return await next();
    if (plan.signup && isAnonymousSignup(body)) {
      const hit = await limiter.hit("anonymous", key);
      if (!hit.allowed) throw overRequestRateLimit(hit.retryAfterSec);
    }
    if (needCaptcha && !(await callerIsAdmin(c, s))) {
      await verifyCaptcha(s.config, captchaTokenOf(body), c.get("clientIp"));
    }
    await next();
  };
}
