/**
 * The device authorization grant (RFC 8628): start it at the device
 * authorization endpoint, show the user the code, then poll the token
 * endpoint at the given `interval`, five seconds slower after each
 * `slow_down`, until the user approves, denies or the code expires.
 * @module
 */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import { internalRequest } from "../internal.ts";
import { OAuthResponse } from "../response.ts";
import { tokenRequest } from "../token_request.ts";

/** The grant type of RFC 8628 §3.4. */
export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/** The device authorization response (RFC 8628 §3.2). */
export interface DeviceAuthorization {
  /** The code the device polls with (secret). */
  device_code: string;
  /** The code the user types. */
  user_code: string;
  /** Where the user goes. */
  verification_uri: string;
  /** The same with the user code in it (for a QR code), when the provider sends one. */
  verification_uri_complete?: string;
  /** Seconds until the codes expire. */
  expires_in: number;
  /** Seconds between polls; default 5. */
  interval?: number;
  /** Any other member. */
  [member: string]: unknown;
}

/** Options of {@linkcode pollDeviceToken}. */
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

/**
 * Starts a device authorization (RFC 8628 §3.1) with the client's
 * authentication; `params` usually carry `scope`.
 *
 * @throws {OAuthError} when the provider refuses
 *
 * @example
 * ```ts ignore
 * import { pollDeviceToken, startDeviceAuthorization } from "@authsvc/oauth2/oidc";
 * const auth = await startDeviceAuthorization(client, { scope: "openid offline_access" });
 * console.log(`Open ${auth.verification_uri} and enter ${auth.user_code}`);
 * const token = await pollDeviceToken(client, auth);
 * ```
 */
export async function startDeviceAuthorization(
  client: Client,
  params: Record<string, unknown> = {},
): Promise<DeviceAuthorization> {
  const url = client.options.deviceAuthorizationUrl;
  if (!url) {
    throw new TypeError(
      `the client has no "deviceAuthorizationUrl" (set it, or build it with Client.discover)`,
    );
  }
  const res = await tokenRequest(
    client,
    url,
    { client_id: client.id, ...params },
    (v, u, o) => internalRequest(client, v, u, o, [], true),
    "post",
  );
  const body = res.parsedHash;
  if (
    !body || typeof body.device_code !== "string" || typeof body.user_code !== "string" ||
    typeof body.verification_uri !== "string" || typeof body.expires_in !== "number"
  ) {
    throw new OAuthError(res, {
      code: "invalid_device_authorization",
      description: "the response lacks device_code, user_code, verification_uri or expires_in",
    });
  }
  return body as DeviceAuthorization;
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

/**
 * Polls the token endpoint until the user has approved the device (RFC 8628
 * §3.4-3.5): waits `interval` seconds (default 5) before each poll, adds 5
 * seconds after each `slow_down`, keeps going on `authorization_pending`,
 * and stops with the provider's error otherwise (`access_denied`,
 * `expired_token`), or with `expired_token` of its own once `expires_in` has
 * passed.
 *
 * @throws {OAuthError} for a denial, an expiry or any other error
 *
 * @example
 * ```ts ignore
 * import { pollDeviceToken } from "@authsvc/oauth2/oidc";
 * const token = await pollDeviceToken(client, auth, { signal: AbortSignal.timeout(600_000) });
 * ```
 */
export async function pollDeviceToken(
  client: Client,
  authorization: DeviceAuthorization,
  options: PollOptions = {},
): Promise<AccessToken> {
  const wait = options.wait ?? timer;
  let interval = authorization.interval ?? 5;
  const deadline = Date.now() + authorization.expires_in * 1000;
  while (true) {
    await wait(interval * 1000, options.signal);
    if (Date.now() >= deadline) {
      const body = JSON.stringify({
        error: "expired_token",
        error_description: "the device code expired before the user approved it",
      });
      throw new OAuthError(new OAuthResponse(new Response(body), body));
    }
    try {
      return await client.getToken(
        {
          ...options.params,
          grant_type: DEVICE_CODE_GRANT,
          device_code: authorization.device_code,
          client_id: client.id,
          ...(options.signal ? { signal: options.signal } : {}),
        },
        options.accessTokenOpts,
      );
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      if (e.code === "authorization_pending") continue;
      if (e.code === "slow_down") {
        interval += 5;
        continue;
      }
      throw e;
    }
  }
}
