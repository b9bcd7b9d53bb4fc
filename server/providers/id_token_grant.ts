/**
 * Sign-in with an ID token a native app obtained itself (auth-js
 * `signInWithIdToken`, `POST /token?grant_type=id_token`), as GoTrue does it:
 * the token is verified against the provider's published keys
 * (providers/id_token.ts: signature, issuer, expiry, at_hash), its audience
 * must be one of the provider's client ids, and the nonce the app sent must
 * hash (SHA-256, hex) to the token's `nonce` claim. The claims become a
 * provider user, which signs in (or is created, or linked by a verified
 * address) exactly as after the redirect flow (auth/accounts.ts).
 *
 * Providers: those whose spec has `nativeIdToken` (apple, google, azure,
 * facebook Limited Login and keycloak today). Each one's issuer and key URL
 * follow EXTERNAL_<X>_URL when set (self-hosted realms, tests), as in the
 * redirect flow.
 */
import { AuthError } from "../auth/errors.ts";
import type { Config, ProviderConfig, ProviderName } from "../config/mod.ts";
import { jose } from "../../deps.ts";
import { verifyIdToken } from "./id_token.ts";
import { userFromClaims } from "./oidc_claims.ts";
import { storableUser } from "./storable.ts";
import { PROVIDER_SPECS, PROVIDERS } from "./specs.ts";
import {
  type IdTokenRules,
  type NativeIdToken,
  ProviderError,
  type ProviderUser,
} from "./types.ts";

/** Providers whose ID tokens the id_token grant accepts: the specs with `nativeIdToken`. */
export const ID_TOKEN_PROVIDERS: readonly ProviderName[] = PROVIDERS.filter((p) =>
  PROVIDER_SPECS[p].nativeIdToken !== undefined
);
export type IdTokenProvider = ProviderName;

/** The native ID-token rules of a provider the grant accepts. */
function nativeOf(provider: IdTokenProvider): NativeIdToken {
  const native = PROVIDER_SPECS[provider].nativeIdToken;
  if (!native) throw new Error(`${provider} has no native ID-token sign-in`);
  return native;
}

/** The parameters of the grant, as auth-js sends them. */
export interface IdTokenGrantParams {
  idToken: string;
  provider?: string;
  issuer?: string;
  nonce?: string;
  accessToken?: string;
}

/** The ID-token rules of a provider under its settings. */
export function idTokenRules(provider: IdTokenProvider, settings: ProviderConfig): IdTokenRules {
  const own = nativeOf(provider).rules;
  if (own) return own(settings.url);
  const rules = PROVIDER_SPECS[provider].endpoints(settings.url).idToken;
  if (!rules) throw new Error(`${provider} has no ID-token rules`);
  return rules;
}

/**
 * The client ids an ID token may be issued to: EXTERNAL_<X>_CLIENT_ID, split
 * at commas (GoTrue's list: the web client id, the iOS bundle id, the Android
 * client id ...).
 */
export function acceptedAudiences(settings: ProviderConfig): string[] {
  return settings.clientId.split(",").map((s) => s.trim()).filter(Boolean);
}

/** 400 validation_failed: a refused grant (RFC 6749 section 5.2). */
function invalid(message: string): AuthError {
  return new AuthError("validation_failed", message, { situation: "oauth" });
}

/** Which provider the request means: `provider`, else the one whose issuer `issuer` is. */
export function resolveProvider(config: Config, p: IdTokenGrantParams): IdTokenProvider {
  if (p.provider) {
    const name = p.provider.toLowerCase();
    if (!(ID_TOKEN_PROVIDERS as readonly string[]).includes(name)) {
      throw invalid(
        `provider "${p.provider.slice(0, 40)}" cannot sign in with an ID token (one of ${
          ID_TOKEN_PROVIDERS.join(", ")
        })`,
      );
    }
    return name as IdTokenProvider;
  }
  if (!p.issuer) throw invalid("provider or issuer is required");
  let claims: Record<string, unknown> = {};
  try {
    claims = jose.decodeJwt(p.idToken) as Record<string, unknown>;
  } catch { /* verification below names the problem */ }
  for (const name of ID_TOKEN_PROVIDERS) {
    const rules = idTokenRules(name, config.external.providers[name]);
    const ok = typeof rules.issuer === "string"
      ? rules.issuer === p.issuer
      : rules.issuer(p.issuer, claims);
    if (ok) return name;
  }
  throw invalid(`issuer "${p.issuer.slice(0, 100)}" is not one of a known provider`);
}

/** The hex SHA-256 of the nonce the app sent: what the provider put in the token. */
export async function hashedNonce(nonce: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(nonce));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Verifies the ID token of an id_token grant and maps its claims to a
 * provider user.
 *
 * @throws {AuthError} 400 validation_failed naming what was wrong,
 *   400 provider_disabled for a provider that is not enabled
 */
export async function verifyGrantIdToken(
  config: Config,
  p: IdTokenGrantParams,
  now: Date,
): Promise<{ provider: ProviderName; user: ProviderUser; emailOptional: boolean }> {
  const provider = resolveProvider(config, p);
  const settings = config.external.providers[provider];
  if (!settings.enabled) {
    throw new AuthError("provider_disabled", `Provider ${provider} is not enabled`);
  }
  const rules = idTokenRules(provider, settings);
  const audiences = acceptedAudiences(settings);
  let claims: Record<string, unknown>;
  try {
    // The nonce is checked below, as GoTrue does for native sign-in (hashed, optional).
    claims = await verifyIdToken(p.idToken, {
      rules: { ...rules, nonce: false },
      audience: audiences,
      nonce: "",
      accessToken: p.accessToken || undefined,
      now,
      jwksCooldownSec: config.external.jwksCooldownSec,
    });
  } catch (e) {
    if (e instanceof ProviderError) throw invalid(`Bad ID token: ${e.message}`);
    throw e;
  }
  if (typeof p.issuer === "string" && p.issuer && p.issuer !== claims.iss) {
    throw invalid("Provided issuer does not match ID token issuer");
  }
  if (nativeOf(provider).hashedNonce) {
    const tokenNonce = typeof claims.nonce === "string" ? claims.nonce : "";
    const sent = p.nonce ?? "";
    if (!!tokenNonce !== !!sent) {
      throw invalid("Passed nonce and nonce in id_token should either both exist or not.");
    }
    if (sent && await hashedNonce(sent) !== tokenNonce) throw invalid("Nonces mismatch");
  }
  if (typeof claims.sub !== "string" || !claims.sub) {
    throw invalid("Missing sub claim in id_token");
  }
  let user: ProviderUser;
  try {
    user = storableUser(await userOf(provider, settings, claims));
  } catch (e) {
    if (e instanceof ProviderError) throw invalid(`Bad ID token: ${e.message}`);
    throw e;
  }
  return { provider, user, emailOptional: false };
}

/** The claims every provider's user mapping drops from custom claims. */
const REGISTERED = new Set([
  "iss",
  "sub",
  "aud",
  "exp",
  "iat",
  "nbf",
  "jti",
  "nonce",
  "at_hash",
  "c_hash",
  "auth_time",
  "azp",
  "name",
  "email",
  "email_verified",
  "picture",
  "preferred_username",
  "given_name",
  "family_name",
]);

async function userOf(
  provider: IdTokenProvider,
  settings: ProviderConfig,
  claims: Record<string, unknown>,
): Promise<ProviderUser> {
  const iss = String(claims.iss);
  const how = nativeOf(provider).user;
  if (how !== "spec") {
    const user = userFromClaims(claims, iss, how.claims);
    const custom: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(claims)) if (!REGISTERED.has(k)) custom[k] = v;
    if (Object.keys(custom).length) user.customClaims = custom;
    return user;
  }
  // The redirect flow's mapping reads the user from the verified claims alone when they have
  // them, with the same e-mail verification rules.
  const spec = PROVIDER_SPECS[provider];
  return await spec.fetchUser({
    client: undefined as never,
    token: undefined as never,
    endpoints: spec.endpoints(settings.url),
    settings,
    idClaims: claims,
    callback: new URLSearchParams(),
  });
}
