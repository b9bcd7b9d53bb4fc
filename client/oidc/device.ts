/**
 * The device authorization grant (RFC 8628): start it at the device
 * authorization endpoint, show the user the code, then poll the token
 * endpoint at the given `interval`, five seconds slower after each
 * `slow_down`, until the user approves, denies or the code expires.
 * @module
 */
import type { AccessToken } from "../access_token.ts";
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import { configuredUrl, postAuthenticated } from "./post.ts";
import { type PollOptions, pollToken } from "./poll.ts";

export type { PollOptions };

/**
 * The grant type of RFC 8628 §3.4.
 *
 * @example
 * ```ts ignore
 * import { DEVICE_CODE_GRANT } from "@authsvc/oauth2/oidc";
 * console.log(DEVICE_CODE_GRANT); // "urn:ietf:params:oauth:grant-type:device_code"
 * ```
 */
export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/**
 * The device authorization response (RFC 8628 §3.2).
 *
 * @example
 * ```ts ignore
 * import { type DeviceAuthorization, startDeviceAuthorization } from "@authsvc/oauth2/oidc";
 * const auth: DeviceAuthorization = await startDeviceAuthorization(client, { scope: "openid" });
 * console.log(auth.verification_uri_complete ?? auth.verification_uri, auth.user_code);
 * ```
 */
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
  const url = configuredUrl(client, "deviceAuthorizationUrl");
  const res = await postAuthenticated(client, url, { client_id: client.id, ...params });
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

/**
 * Polls the token endpoint until the user has approved the device (RFC 8628
 * §3.4-3.5): waits `interval` seconds (default 5) before each poll, adds 5
 * seconds after each `slow_down`, keeps going on `authorization_pending`,
 * and stops with the provider's error otherwise (`access_denied`,
 * `expired_token`), or with `expired_token` of its own once `expires_in` has
 * passed; a `Retry-After` header makes it wait at least that long.
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
  return await pollToken(client, {
    grant: { grant_type: DEVICE_CODE_GRANT, device_code: authorization.device_code },
    interval: authorization.interval,
    expiresIn: authorization.expires_in,
    expired: "the device code expired before the user approved it",
  }, options);
}
