/**
 * Polling the token endpoint for a grant the user approves elsewhere: the
 * device grant (RFC 8628 §3.4-3.5) and CIBA in poll mode (OpenID Connect
 * CIBA §7.3, §11). One loop for both: wait `interval` seconds before each
 * poll, 5 seconds more after each `slow_down`, at least what a `Retry-After`
 * header asks (RFC 9110 §10.2.3: seconds or a date), keep going on
 * `authorization_pending` (and on 429/503 with `Retry-After`), stop with
 * any other error, or with `expired_token` once the request has expired.
 * @module
 */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import { OAuthResponse } from "../response.ts";

/**
 * Options of {@linkcode pollDeviceToken} and `pollBackchannelToken`.
 *
 * @example
 * ```ts ignore
 * import { pollDeviceToken, type PollOptions } from "@authsvc/oauth2/oidc";
 * const options: PollOptions = { signal: AbortSignal.timeout(600_000) };
 * const token = await pollDeviceToken(client, auth, options);
 * ```
 */
export interface PollOptions {
  /** Stops polling (rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Waits before each poll; default a timer. Tests and UIs may pass their own. */
  wait?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Options of the resulting AccessToken. */
  accessTokenOpts?: AccessTokenOptions;
  /** Extra token request parameters (e.g. `idToken` expectations). */
  params?: Record<string, unknown>;
}

function timer(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const id = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(id);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/** Milliseconds a `Retry-After` value asks for (delay-seconds or an HTTP-date), if any. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** What one polled grant needs. */
export interface PollTarget {
  /** The grant's wire parameters (`grant_type`, `device_code` / `auth_req_id`). */
  grant: Record<string, string>;
  /** Seconds between polls as the provider said; default 5. */
  interval?: number;
  /** Seconds until the request expires. */
  expiresIn: number;
  /** The description of the library's own `expired_token`. */
  expired: string;
}

/** Polls until the token is issued (see the module). */
export async function pollToken(
  client: Client,
  target: PollTarget,
  options: PollOptions,
): Promise<AccessToken> {
  const wait = options.wait ?? timer;
  let interval = target.interval ?? 5;
  let delay = interval * 1000;
  const deadline = Date.now() + target.expiresIn * 1000;
  while (true) {
    await wait(delay, options.signal);
    if (Date.now() >= deadline) {
      const body = JSON.stringify({ error: "expired_token", error_description: target.expired });
      throw new OAuthError(new OAuthResponse(new Response(body), body));
    }
    try {
      return await client.getToken(
        {
          ...options.params,
          ...target.grant,
          client_id: client.id,
          ...(options.signal ? { signal: options.signal } : {}),
        },
        options.accessTokenOpts,
      );
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      const status = e.response.status;
      const asked = retryAfterMs(e.response.headers.get("retry-after"));
      if (e.code === "slow_down") interval += 5;
      else if (
        e.code !== "authorization_pending" &&
        !(asked !== undefined && (status === 429 || status === 503))
      ) throw e;
      delay = Math.max(interval * 1000, asked ?? 0);
    }
  }
}
