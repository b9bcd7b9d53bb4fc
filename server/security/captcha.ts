/**
 * Captcha verification with the provider's documented siteverify call:
 * `POST` of a form (`application/x-www-form-urlencoded`) with `secret`,
 * `response` (the user's token) and `remoteip`; the answer is JSON with
 * `success` and `error-codes`. hCaptcha: https://hcaptcha.com/siteverify,
 * Turnstile: https://challenges.cloudflare.com/turnstile/v0/siteverify.
 * SECURITY_CAPTCHA_VERIFY_URL replaces the whole URL (tests, proxies).
 *
 * The check fails closed: a provider that does not answer in
 * SECURITY_CAPTCHA_TIMEOUT, answers with an error status or with something
 * that is not its JSON refuses the request.
 */
import type { Config } from "../config/mod.ts";
import { AuthError } from "../auth/errors.ts";

/** The documented siteverify endpoints. */
export const SITEVERIFY_URLS = {
  hcaptcha: "https://hcaptcha.com/siteverify",
  turnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
} as const;

/**
 * The captcha token of a body: `captcha_token`, or where @supabase/auth-js
 * puts it, `gotrue_meta_security.captcha_token`.
 */
export function captchaTokenOf(body: Record<string, unknown>): string {
  if (typeof body.captcha_token === "string" && body.captcha_token) return body.captcha_token;
  const meta = body.gotrue_meta_security;
  if (meta && typeof meta === "object" && !Array.isArray(meta)) {
    const t = (meta as Record<string, unknown>).captcha_token;
    if (typeof t === "string" && t) return t;
  }
  return "";
}

function failed(msg: string): AuthError {
  return new AuthError("captcha_failed", msg);
}

/**
 * Verifies `token` with the configured provider; throws AuthError when it is
 * missing or refused (400 captcha_failed) or the provider cannot be asked
 * (503 captcha_failed: fail closed).
 *
 * @param config the server's settings (security.captcha)
 * @param token the user's captcha token ("" when missing)
 * @param remoteIp the client IP, sent as `remoteip` when known
 * @throws {AuthError} when the request must be refused
 */
export async function verifyCaptcha(
  config: Config,
  token: string,
  remoteIp: string,
): Promise<void> {
  const cc = config.security.captcha;
  if (!token) throw failed("captcha protection: request disallowed (captcha_token is missing)");
  if (token.length > 4096) throw failed("captcha protection: captcha_token is too long");
  const url = cc.verifyUrl || SITEVERIFY_URLS[cc.provider];
  const form = new URLSearchParams({ secret: cc.secret, response: token });
  if (remoteIp) form.set("remoteip", remoteIp);
  const name = cc.provider === "hcaptcha" ? "hCaptcha" : "Turnstile";
  const unavailable = (why: string, cause?: unknown) =>
    new AuthError("captcha_failed", `Captcha verification failed: ${name} ${why}`, {
      situation: "upstream_failed",
      retryAfterSec: 5,
      cause,
    });
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: form,
      signal: AbortSignal.timeout(Math.max(1, cc.timeoutSec * 1000)),
    });
  } catch (e) {
    const name = (e as Error)?.name;
    if (name === "TimeoutError" || name === "AbortError") {
      throw unavailable(`did not answer within ${cc.timeoutSec} s`, e);
    }
    throw unavailable("could not be reached", e);
  }
  let answer: { success?: unknown; "error-codes"?: unknown };
  try {
    if (!res.ok) throw new Error(`status ${res.status}`);
    answer = await res.json();
  } catch (e) {
    await res.body?.cancel().catch(() => {});
    throw unavailable(`answered with status ${res.status} and no verdict`, e);
  }
  if (answer?.success !== true) {
    const codes = Array.isArray(answer?.["error-codes"])
      ? (answer["error-codes"] as unknown[]).filter((c) => typeof c === "string").join(", ")
      : "";
    throw failed(`captcha protection: request disallowed${codes ? ` (${codes})` : ""}`);
  }
}
