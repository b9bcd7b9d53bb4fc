/**
 * Leaked-password protection: Have I Been Pwned's k-anonymity range API.
 * Only the first 5 hex digits of the password's SHA-1 leave the server
 * (`GET {PASSWORD_HIBP_API_URL}/range/{PREFIX}` with `Add-Padding: true`);
 * the answer lists the suffixes of every breached hash with that prefix, as
 * `SUFFIX:COUNT` lines (padding lines have count 0), and the match is made
 * here.
 *
 * `checkPassword` is the whole password policy of a password being set
 * (sign-up, a change, an admin update): length and required characters
 * (auth/passwords.ts) plus this check, refused together as GoTrue does with
 * 422 `weak_password` and `weak_password.reasons` (`length`, `characters`,
 * `pwned`).
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Logger } from "../observe/log.ts";
import { checkPasswordStrength } from "./passwords.ts";

/** How long one range request may take (GoTrue's client allows 5 s). */
export const HIBP_TIMEOUT_MS = 5000;

/** GoTrue's message for a breached password. */
export const PWNED_MESSAGE =
  "Password is known to be weak and easy to guess, please choose a different one.";

/** The upper-case hex SHA-1 of a password. */
export async function sha1Hex(password: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(password));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("")
    .toUpperCase();
}

/**
 * True when the range API lists the password as breached. Throws when the
 * API cannot be asked (network, timeout, a non-200 answer).
 */
export async function isPwned(
  hibp: Config["password"]["hibp"],
  password: string,
  fetchFn: typeof fetch = fetch,
): Promise<boolean> {
  const hash = await sha1Hex(password);
  const prefix = hash.slice(0, 5);
  const suffix = hash.slice(5);
  const res = await fetchFn(`${hibp.apiUrl}/range/${prefix}`, {
    headers: { "user-agent": hibp.userAgent, "add-padding": "true" },
    signal: AbortSignal.timeout(HIBP_TIMEOUT_MS),
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`HIBP range API answered ${res.status}`);
  }
  const text = await res.text();
  for (const line of text.split("\n")) {
    const [s, n] = line.trim().split(":");
    if (s?.toUpperCase() === suffix && Number(n) > 0) return true;
  }
  return false;
}

/** What checkPassword needs of the services. */
export interface PasswordPolicyDeps {
  config: Config;
  log: Logger;
}

/**
 * The policy for a password being set: throws 422 weak_password listing every
 * reason (`length`, `characters`, `pwned`), or 422 validation_failed for a
 * password longer than 72 bytes. When the leak check cannot be made, the
 * password is allowed and a warning logged, unless PASSWORD_HIBP_FAIL_CLOSED
 * (then 500, GoTrue's answer).
 */
export async function checkPassword(
  s: PasswordPolicyDeps,
  password: string,
  fetchFn: typeof fetch = fetch,
): Promise<void> {
  let weak: AuthError | null = null;
  try {
    checkPasswordStrength(s.config, password);
  } catch (e) {
    if (!(e instanceof AuthError) || e.errorCode !== "weak_password") throw e;
    weak = e;
  }
  const hibp = s.config.password.hibp;
  let pwned = false;
  if (hibp.enabled) {
    try {
      pwned = await isPwned(hibp, password, fetchFn);
    } catch (e) {
      if (hibp.failClosed) {
        throw new AuthError(
          "unexpected_failure",
          "Unable to perform password strength check with HaveIBeenPwned.org.",
        );
      }
      s.log.warn("leaked-password check failed, the password is allowed", {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }
  if (!pwned) {
    if (weak) throw weak;
    return;
  }
  const reasons = [
    ...((weak?.details.weak_password as { reasons?: string[] } | undefined)?.reasons ?? []),
    "pwned",
  ];
  const message = weak ? `${weak.message} ${PWNED_MESSAGE}` : PWNED_MESSAGE;
  throw new AuthError("weak_password", message, { details: { weak_password: { reasons } } });
}

/**
 * On a password sign-in, GoTrue tells the client (auth-js `weakPassword`)
 * when the correct password no longer meets the policy: the token answer
 * carries `weak_password: {message, reasons}`. Never throws; null when the
 * password passes (or the leak check could not be made).
 */
export async function weakPasswordInfo(
  s: PasswordPolicyDeps,
  password: string,
  fetchFn: typeof fetch = fetch,
): Promise<{ message: string; reasons: string[] } | null> {
  try {
    await checkPassword(
      { ...s, config: failOpen(s.config) },
      password,
      fetchFn,
    );
    return null;
  } catch (e) {
    if (e instanceof AuthError && e.errorCode === "weak_password") {
      const reasons = (e.details.weak_password as { reasons?: string[] })?.reasons ?? [];
      return { message: e.message, reasons };
    }
    return null;
  }
}

/** The config with the leak check failing open (a sign-in is never refused for it). */
function failOpen(config: Config): Config {
  if (!config.password.hibp.failClosed) return config;
  return {
    ...config,
    password: { ...config.password, hibp: { ...config.password.hibp, failClosed: false } },
  };
}
