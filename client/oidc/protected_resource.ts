/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728): what a resource says
 * of itself (its authorization servers, scopes, how it takes tokens), read
 * from `/.well-known/oauth-protected-resource` or from the
 * `resource_metadata` a 401's `WWW-Authenticate` names (§5).
 * @module
 */
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import { OAuthResponse } from "../response.ts";

/**
 * The metadata of RFC 9728 §2 (members the library reads; others kept).
 *
 * @example
 * ```ts ignore
 * import { discoverProtectedResource, type ProtectedResourceMetadata } from "@authsvc/oauth2/oidc";
 * const md: ProtectedResourceMetadata = await discoverProtectedResource("https://api.example.com");
 * console.log(md.authorization_servers?.[0]);
 * ```
 */
export interface ProtectedResourceMetadata {
  /** The resource identifier; equal to the one asked for. */
  resource: string;
  /** Issuers of the authorization servers the resource trusts. */
  authorization_servers?: string[];
  /** Its JWKS (signed responses). */
  jwks_uri?: string;
  /** Scopes it uses. */
  scopes_supported?: string[];
  /** How it takes tokens: `header`, `body`, `query`. */
  bearer_methods_supported?: string[];
  /** Whether it requires certificate-bound tokens (RFC 8705). */
  tls_client_certificate_bound_access_tokens?: boolean;
  /** Whether it requires DPoP-bound tokens. */
  dpop_bound_access_tokens_required?: boolean;
  /** Any other member. */
  [member: string]: unknown;
}

/**
 * Options of {@linkcode discoverProtectedResource}.
 *
 * @example
 * ```ts ignore
 * import { discoverProtectedResource, type ProtectedResourceOptions } from "@authsvc/oauth2/oidc";
 * const options: ProtectedResourceOptions = { client }; // its transport, timeout and TLS settings
 * await discoverProtectedResource("https://api.example.com/v1", options);
 * ```
 */
export interface ProtectedResourceOptions {
  /** Send the request through this client (its connection settings); default plain `fetch`. */
  client?: Client;
  /** The metadata URL from a `WWW-Authenticate` challenge, instead of the well-known one. */
  metadataUrl?: string;
}

/**
 * The `resource_metadata` URL of a `WWW-Authenticate` challenge (RFC 9728
 * §5.1), from the header value or a response; undefined when absent.
 *
 * @example
 * ```ts ignore
 * import { resourceMetadataUrl } from "@authsvc/oauth2/oidc";
 * const res = await fetch("https://api.example.com/v1/things");
 * if (res.status === 401) console.log(resourceMetadataUrl(res));
 * ```
 */
export function resourceMetadataUrl(challenge: string | Response): string | undefined {
  const header = typeof challenge === "string"
    ? challenge
    : challenge.headers.get("www-authenticate") ?? "";
  return /(?:^|[\s,])resource_metadata\s*=\s*"([^"]*)"/i.exec(header)?.[1];
}

/** The well-known metadata URL of a resource identifier (RFC 9728 §3.1). */
function wellKnown(resource: URL): string {
  const path = resource.pathname === "/" ? "" : resource.pathname;
  return `${resource.origin}/.well-known/oauth-protected-resource${path}${resource.search}`;
}

/**
 * Reads the metadata of the protected resource `resource` (an https or
 * http URL without fragment) and checks that its `resource` is that
 * identifier (RFC 9728 §3.3: otherwise the metadata could be another
 * resource's, and the client would send its tokens where that one says).
 *
 * @throws {TypeError} for a resource identifier with a fragment or another scheme
 * @throws {OAuthError} `invalid_resource_metadata` for a missing document or another `resource`
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * import { discoverProtectedResource } from "@authsvc/oauth2/oidc";
 * const md = await discoverProtectedResource("https://api.example.com/v1");
 * const client = await Client.discover(md.authorization_servers![0], "app", "secret");
 * ```
 */
export async function discoverProtectedResource(
  resource: string,
  options: ProtectedResourceOptions = {},
): Promise<ProtectedResourceMetadata> {
  const id = new URL(resource);
  if ((id.protocol !== "https:" && id.protocol !== "http:") || id.hash) {
    throw new TypeError(
      `discoverProtectedResource: "${resource}" is not a resource identifier (http(s), no fragment)`,
    );
  }
  const url = options.metadataUrl ?? wellKnown(id);
  const headers = { accept: "application/json" };
  let response: OAuthResponse;
  if (options.client) {
    response = await options.client.request("get", url, { headers, raiseErrors: false });
  } else {
    response = await OAuthResponse.from(await fetch(url, { headers }));
  }
  const md = response.parsedHash;
  if (response.status !== 200 || !md) {
    throw new OAuthError(response, {
      code: "invalid_resource_metadata",
      description: `no protected resource metadata at ${url} (status ${response.status})`,
    });
  }
  if (md.resource !== resource) {
    throw new OAuthError(response, {
      code: "invalid_resource_metadata",
      description: `the metadata's resource ${JSON.stringify(md.resource)} is not ${resource}`,
    });
  }
  if (md.authorization_servers !== undefined && !isStringArray(md.authorization_servers)) {
    throw new OAuthError(response, {
      code: "invalid_resource_metadata",
      description: "authorization_servers is not an array of strings",
    });
  }
  return md as ProtectedResourceMetadata;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === "string");
}
