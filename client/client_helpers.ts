/**
 * Helpers of `Client`: request bodies, the secrets a token request carries,
 * building the `AccessToken` from a token response, and the redacted view of
 * the options.
 * @module
 */
import {
  AccessToken,
  accessTokenFromOwnedHash,
  type AccessTokenOptions,
  withoutNoTokenCheck,
} from "./access_token.ts";
import type { Client, ResolvedClientOptions } from "./client.ts";
import { config } from "./config.ts";
import { OAuthError } from "./error.ts";
import type { RequestOptions, TokenParams } from "./options.ts";
import type { OAuthResponse } from "./response.ts";
import { formBody } from "./url.ts";
import { provenWithDpop } from "./internal.ts";

/** The options with the assertion key and TLS key replaced by the filtered label. */
export function redactOptions(options: ResolvedClientOptions): Record<string, unknown> {
  const label = config.filteredLabel;
  const { clientAssertionKey, connectionOpts, ...rest } = options;
  const { key, ...conn } = connectionOpts;
  return {
    ...rest,
    ...(clientAssertionKey ? { clientAssertionKey: label } : {}),
    connectionOpts: { ...conn, ...(key ? { key: label } : {}) },
  };
}

const SECRET_PARAMS = [
  "password",
  "code",
  "refresh_token",
  "code_verifier",
  "assertion",
  "device_code",
  "auth_req_id",
  "subject_token",
  "actor_token",
];

/** Secret wire values of a token request (password, code ...), for redaction. */
export function tokenSecrets(params: TokenParams): string[] {
  const out: string[] = [];
  for (const k of SECRET_PARAMS) {
    if (typeof params[k] === "string") out.push(params[k] as string);
  }
  return out;
}

const FORM_TYPE = "application/x-www-form-urlencoded";

/** A request body: strings and bytes as given, records form-encoded or JSON by content type. */
export function encodeBody(
  body: RequestOptions["body"],
  headers: Record<string, string>,
): BodyInit | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return body as Uint8Array<ArrayBuffer>;
  if (typeof body !== "object") {
    throw new TypeError(`request: "body" must be a string, an object or bytes, got ${typeof body}`);
  }
  const type = headers["content-type"];
  if (type === FORM_TYPE) return formBody(body);
  if (type && /json/i.test(type)) return JSON.stringify(body);
  if (!type) headers["content-type"] = FORM_TYPE;
  return formBody(body);
}

/** The `AccessToken` of a token response, or the `OAuthError` it deserves. */
export function buildToken(
  client: Client,
  response: OAuthResponse,
  accessTokenOpts: AccessTokenOptions,
  secrets: readonly (string | undefined)[],
): AccessToken {
  const hash = response.parsedHash;
  if (response.status >= 400 || (hash && typeof hash.error === "string")) {
    throw response.error ?? new OAuthError(response, { secrets });
  }
  if (!hash) {
    throw new OAuthError(response, {
      code: "invalid_token_response",
      description: "the token response is neither a JSON object nor form-encoded",
      secrets,
    });
  }
  for (const k in accessTokenOpts) hash[k] = accessTokenOpts[k];
  const token = withoutNoTokenCheck(() => accessTokenFromOwnedHash(client, hash));
  if (!token.token && !token.refreshToken) {
    throw new OAuthError(response, {
      code: "invalid_token_response",
      description: "the token response holds no access token",
      secrets,
    });
  }
  checkSenderConstraint(client, response, token.params.token_type, secrets);
  token.response = response;
  return token;
}

/**
 * A token requested with a DPoP proof must be a DPoP token (RFC 9449 §5);
 * under the FAPI 2.0 profile every token is sender-constrained: DPoP, or a
 * Bearer token bound to the client's TLS certificate (RFC 8705 §3).
 */
function checkSenderConstraint(
  client: Client,
  response: OAuthResponse,
  tokenType: unknown,
  secrets: readonly (string | undefined)[],
): void {
  const type = typeof tokenType === "string" ? tokenType.toLowerCase() : undefined;
  let reason: string | undefined;
  if (provenWithDpop.has(response.response) && type !== "dpop") {
    reason = `the token request carried a DPoP proof, but the token_type is ${
      JSON.stringify(tokenType)
    }, not DPoP`;
  } else if (client.options.profile === "fapi2" && type !== "dpop") {
    const conn = client.options.connectionOpts;
    if (!(conn.cert && conn.key) || type !== "bearer") {
      reason = `FAPI 2.0 needs a sender-constrained token: DPoP, or Bearer with a TLS client ` +
        `certificate; got token_type ${JSON.stringify(tokenType)}`;
    }
  }
  if (reason) {
    throw new OAuthError(response, { code: "invalid_token_type", description: reason, secrets });
  }
}
