/**
 * Authorization server metadata: OpenID Connect Discovery 1.0 and RFC 8414,
 * read into client options (`Client.discover`). With a TLS client
 * certificate, the metadata's `mtls_endpoint_aliases` (RFC 8705 §5) win.
 * @module
 */
import type { Client } from "./client.ts";
import { OAuthError } from "./error.ts";
import type { ClientOptions } from "./options.ts";
import type { OAuthResponse } from "./response.ts";

/** Client options and the metadata members they come from. */
const ENDPOINTS: readonly [keyof ClientOptions, string][] = [
  ["authorizeUrl", "authorization_endpoint"],
  ["tokenUrl", "token_endpoint"],
  ["revokeUrl", "revocation_endpoint"],
  ["jwksUri", "jwks_uri"],
  ["userinfoUrl", "userinfo_endpoint"],
  ["introspectionUrl", "introspection_endpoint"],
  ["parUrl", "pushed_authorization_request_endpoint"],
  ["deviceAuthorizationUrl", "device_authorization_endpoint"],
  ["backchannelAuthenticationUrl", "backchannel_authentication_endpoint"],
];

/**
 * Reads the metadata of `issuer` with `probe` (a client of the caller's
 * options): `<issuer>/.well-known/openid-configuration`, else
 * `/.well-known/oauth-authorization-server<issuer path>`.
 *
 * @throws {OAuthError} `discovery_failed` when neither answers with metadata,
 *   `invalid_issuer` when the metadata names another issuer
 */
export async function discoverMetadata(probe: Client, issuer: string): Promise<ClientOptions> {
  const base = new URL(issuer);
  const path = base.pathname.replace(/\/$/, "");
  let response: OAuthResponse | undefined;
  for (
    const url of [
      `${base.origin}${path}/.well-known/openid-configuration`,
      `${base.origin}/.well-known/oauth-authorization-server${path}`,
    ]
  ) {
    response = await probe.request("get", url, {
      raiseErrors: false,
      headers: { accept: "application/json" },
    });
    if (response.status === 200 && response.parsedHash) break;
  }
  const md = response!.parsedHash;
  if (response!.status !== 200 || !md) {
    throw new OAuthError(response!, {
      code: "discovery_failed",
      description: `no provider metadata for ${issuer}`,
    });
  }
  if (md.issuer !== issuer) {
    throw new OAuthError(response!, {
      code: "invalid_issuer",
      description: `the metadata's issuer ${JSON.stringify(md.issuer)} is not ${issuer}`,
    });
  }
  const conn = probe.options.connectionOpts;
  const aliases = conn.cert && conn.key && isRecord(md.mtls_endpoint_aliases)
    ? md.mtls_endpoint_aliases
    : {};
  const found: Record<string, unknown> = { site: issuer, issuer, metadata: md };
  for (const [option, member] of ENDPOINTS) {
    const value = aliases[member] ?? md[member];
    if (typeof value === "string") found[option] = value;
  }
  return found as ClientOptions;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
