/**
 * A POST with the client's authentication to one of the provider's
 * endpoints beside the token endpoint (device authorization, CIBA, PAR,
 * introspection): the same road as a token request (`authScheme`, the
 * cross-origin rule, redaction).
 * @module
 */
import type { Client } from "../client.ts";
import { internalRequest } from "../internal.ts";
import type { ClientOptions, TokenParams } from "../options.ts";
import type { OAuthResponse } from "../response.ts";
import { tokenRequest } from "../token_request.ts";

/** The URL of an endpoint option, or a TypeError saying how to get one. */
export function configuredUrl(
  client: Client,
  name: keyof ClientOptions & keyof Client["options"],
): string {
  const url = client.options[name];
  if (typeof url !== "string" || !url) {
    throw new TypeError(`the client has no "${name}" (set it, or build it with Client.discover)`);
  }
  return url;
}

/** POSTs `params` to `url` with the client's authentication; `secrets` are redacted. */
export function postAuthenticated(
  client: Client,
  url: string,
  params: TokenParams,
  secrets: readonly (string | undefined)[] = [],
): Promise<OAuthResponse> {
  return tokenRequest(
    client,
    url,
    params,
    (v, u, o) => internalRequest(client, v, u, o, secrets, true),
    "post",
  );
}
