/**
 * OpenID Connect Client-Initiated Backchannel Authentication (CIBA), poll
 * mode: the client asks the provider to authenticate a user it names (a
 * `login_hint` ...) on the user's own device, then polls the token endpoint
 * (CIBA §7, §10.1, §11) with the loop of the device grant (`slow_down`,
 * `Retry-After`).
 * @module
 */
import type { AccessToken } from "../access_token.ts";
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import { configuredUrl, postAuthenticated } from "./post.ts";
import { type PollOptions, pollToken } from "./poll.ts";

/**
 * The grant type of CIBA §10.1.
 *
 * @example
 * ```ts ignore
 * import { CIBA_GRANT } from "@authsvc/oauth2/oidc";
 * console.log(CIBA_GRANT); // "urn:openid:params:grant-type:ciba"
 * ```
 */
export const CIBA_GRANT = "urn:openid:params:grant-type:ciba";

/**
 * The successful authentication request acknowledgement (CIBA §7.3).
 *
 * @example
 * ```ts ignore
 * import { type BackchannelAuthentication, startBackchannelAuthentication } from "@authsvc/oauth2/oidc";
 * const auth: BackchannelAuthentication = await startBackchannelAuthentication(client, { scope: "openid", login_hint: "alice" });
 * console.log(auth.auth_req_id, auth.expires_in);
 * ```
 */
export interface BackchannelAuthentication {
  /** The request's id, polled with (secret). */
  auth_req_id: string;
  /** Seconds until it expires. */
  expires_in: number;
  /** Seconds between polls; default 5. */
  interval?: number;
  /** Any other member. */
  [member: string]: unknown;
}

/**
 * Starts a backchannel authentication (CIBA §7.1) at the provider's
 * `backchannel_authentication_endpoint` with the client's authentication.
 * `params` carry `scope` (with `openid`) and one hint of the user:
 * `login_hint`, `id_token_hint` or `login_hint_token`; also
 * `binding_message`, `acr_values`, `requested_expiry`.
 *
 * @throws {TypeError} without `openid` in `scope` or without a hint
 * @throws {OAuthError} when the provider refuses (`unknown_user_id` ...)
 *
 * @example
 * ```ts ignore
 * import { pollBackchannelToken, startBackchannelAuthentication } from "@authsvc/oauth2/oidc";
 * const auth = await startBackchannelAuthentication(client, {
 *   scope: "openid", login_hint: "alice@example.com", binding_message: "W4SCT",
 * });
 * const token = await pollBackchannelToken(client, auth);
 * ```
 */
export async function startBackchannelAuthentication(
  client: Client,
  params: Record<string, unknown>,
): Promise<BackchannelAuthentication> {
  if (!String(params.scope ?? "").split(" ").includes("openid")) {
    throw new TypeError(`startBackchannelAuthentication: "scope" must include openid`);
  }
  if (!["login_hint", "id_token_hint", "login_hint_token"].some((k) => params[k] !== undefined)) {
    throw new TypeError(
      `startBackchannelAuthentication: one of login_hint, id_token_hint, login_hint_token is required`,
    );
  }
  const url = configuredUrl(client, "backchannelAuthenticationUrl");
  const res = await postAuthenticated(client, url, { ...params });
  const body = res.parsedHash;
  if (!body || typeof body.auth_req_id !== "string" || typeof body.expires_in !== "number") {
    throw new OAuthError(res, {
      code: "invalid_backchannel_authentication",
      description: "the response lacks auth_req_id or expires_in",
    });
  }
  return body as BackchannelAuthentication;
}

/**
 * Polls the token endpoint until the user has approved the request on
 * their device (CIBA §10.1, §11): waits `interval` seconds (default 5)
 * before each poll, 5 more after each `slow_down`, at least what a
 * `Retry-After` asks, and ends with the token, the provider's error
 * (`access_denied`, `expired_token`), or `expired_token` of its own once
 * `expires_in` has passed.
 *
 * @throws {OAuthError} for a denial, an expiry or any other error
 *
 * @example
 * ```ts ignore
 * import { pollBackchannelToken } from "@authsvc/oauth2/oidc";
 * const token = await pollBackchannelToken(client, auth, { signal: AbortSignal.timeout(300_000) });
 * ```
 */
export function pollBackchannelToken(
  client: Client,
  authentication: BackchannelAuthentication,
  options: PollOptions = {},
): Promise<AccessToken> {
  return pollToken(client, {
    grant: { grant_type: CIBA_GRANT, auth_req_id: authentication.auth_req_id },
    interval: authentication.interval,
    expiresIn: authentication.expires_in,
    expired: "the backchannel authentication request expired before the user approved it",
  }, options);
}
