/**
 * Abuse protection as middleware of the route table (api/routes.ts names it
 * per row): the per-client request limits and the captcha. A row lists them
 * in the order they run, limits first, as GoTrue's api.go does.
 *
 * Hono keeps the body it read, so reading it here and again in the handler
 * works (tested). A caller whose bearer token passes the admin check skips the
 * captcha, as in GoTrue.
 */
import type { MiddlewareHandler } from "../../deps.ts";
import { type AppEnv, bearerIn, type Ctx } from "../api/context.ts";
import { type Body, readBody } from "../api/input.ts";
import { isAdminToken } from "../auth/admin_access.ts";
import type { Services } from "../services.ts";
import { captchaTokenOf, verifyCaptcha } from "./captcha.ts";
import { type LimitName, overRequestRateLimit } from "./rate_limit.ts";

/** A middleware of the route table. */
type Guard = MiddlewareHandler<AppEnv>;

/** The rate-limit key: the RATE_LIMIT_HEADER value when set and sent, else the client IP. */
export function rateKey(c: Ctx, s: Services): string {
  return rateKeyOf(s, c.req.raw.headers, c.get("clientIp"));
}

/** rateKey from the request's headers and its client IP. */
export function rateKeyOf(s: Services, headers: Headers, clientIp: string): string {
  const h = s.config.rateLimit.header;
  const v = h ? headers.get(h)?.trim() : undefined;
  return v ? `h:${v.slice(0, 200)}` : `ip:${clientIp || "unknown"}`;
}

async function count(c: Ctx, name: LimitName): Promise<void> {
  const s = c.get("services");
  const hit = await s.limiter.hit(name, rateKey(c, s));
  if (!hit.allowed) throw overRequestRateLimit(hit.retryAfterSec);
}

/**
 * Counts the request against limit `name` (rate_limit.ts); 429
 * over_request_rate_limit with Retry-After over it. A HEAD request, which
 * hono answers with the GET row, counts against nothing: link scanners that
 * open a mail's link first spend none of the user's requests.
 */
export function limit(name: LimitName): Guard {
  return async (c, next) => {
    if (c.req.method !== "HEAD") await count(c, name);
    await next();
  };
}

/** POST /signup: a body without email and phone (an anonymous sign-up) also counts as `anonymous`. */
export const limitAnonymous: Guard = async (c, next) => {
  const body = await readBody(c);
  if (isAnonymousSignup(body)) await count(c, "anonymous");
  await next();
};

function isAnonymousSignup(body: Body): boolean {
  const has = (v: unknown) => typeof v === "string" && v.trim() !== "";
  return !has(body.email) && !has(body.phone);
}

/**
 * With SECURITY_CAPTCHA_ENABLED, the body's captcha token must pass the
 * provider's check (captcha.ts) unless the caller has an admin bearer token;
 * `when` narrows it to some requests of the route.
 */
export function captcha(when?: (c: Ctx) => boolean | Promise<boolean>): Guard {
  return async (c, next) => {
    const s = c.get("services");
    if (s.config.security.captcha.enabled && (!when || await when(c))) {
      const body = await readBody(c);
      if (!(await callerIsAdmin(c, s))) {
        await verifyCaptcha(s.config, captchaTokenOf(body), c.get("clientIp"));
      }
    }
    await next();
  };
}

/**
 * POST /token: the password grant only. The grant type may come in the query
 * or the body (token.ts reads both), so moving it to the body does not skip
 * the captcha.
 */
export async function passwordGrant(c: Ctx): Promise<boolean> {
  const inQuery = c.req.query("grant_type");
  if (inQuery !== undefined) return inQuery === "password";
  return (await readBody(c)).grant_type === "password";
}

/**
 * Whether the caller's bearer token passes the one admin check
 * (auth/admin_access.ts): the same token that opens the admin routes skips
 * the captcha, and one they refuse (an ended session, an operator's aal1
 * sign-in) does not.
 */
async function callerIsAdmin(c: Ctx, s: Services): Promise<boolean> {
  const token = bearerIn(c.req.header("authorization"));
  return token ? await isAdminToken(s, token) : false;
}
