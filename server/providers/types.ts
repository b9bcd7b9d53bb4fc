/**
 * What every external provider module describes: its endpoints (with the
 * `EXTERNAL_<X>_URL` base override applied), default scopes, how the client
 * authenticates at the token endpoint, whether PKCE and ID tokens are used,
 * and how its user-info answer (or ID token) becomes one identity.
 *
 * The OAuth side of every provider runs on this repository's own client
 * library (`mod.ts`): the registry builds a `Client`, `/authorize` asks it for
 * the authorization URL and `/callback` exchanges the code with
 * `client.authCode.getToken` and reads the user with `AccessToken.get`.
 */
import type { AccessToken, AuthScheme, Client } from "../../mod.ts";

/** One e-mail address a provider reports for the user. */
export interface ProviderEmail {
  email: string;
  /** True only when the provider says it verified the address. */
  verified: boolean;
  primary: boolean;
}

/** The user as one provider describes them, before any account decision. */
export interface ProviderUser {
  /** The provider's stable user id (`sub`); the identity's provider_id. */
  id: string;
  emails: ProviderEmail[];
  name?: string;
  avatarUrl?: string;
  /** Login handle, where the provider has one (github, twitter). */
  userName?: string;
  /** Further claims kept in `identity_data.custom_claims`. */
  customClaims?: Record<string, unknown>;
  /** The issuer or API base the data came from (`identity_data.iss`). */
  issuer: string;
}

/** ID-token rules of a provider that issues them (OpenID Connect). */
export interface IdTokenRules {
  /** Where the signing keys are published. */
  jwksUri: string;
  /** The expected `iss`; a function where it depends on the token (azure tenants). */
  issuer: string | ((iss: string, claims: Record<string, unknown>) => boolean);
  /**
   * False for a provider that ignores the OpenID `nonce` (LinkedIn puts none
   * in its ID tokens): none is sent and none is required. Default true.
   */
  nonce?: boolean;
}

/** The endpoints of one provider after the base-URL override. */
export interface Endpoints {
  authorize: string;
  token: string;
  /** User-info or API base, as the provider module needs it. */
  api: string;
  idToken?: IdTokenRules;
}

/** What a provider module's `fetchUser` receives. */
export interface UserInfoContext {
  client: Client;
  token: AccessToken;
  endpoints: Endpoints;
  settings: ProviderConfig;
  /** The verified ID token's claims, when the provider sent one. */
  idClaims?: Record<string, unknown>;
  /** Parameters of the callback request (apple posts `user` there). */
  callback: URLSearchParams;
}

/** The description of one external provider. */
export interface ProviderSpec<N extends string = string> {
  /** Its key in PROVIDER_SPECS (specs.ts checks that they agree). */
  name: N;
  /** Endpoints for a base URL override ("" when unset). */
  endpoints(baseUrl: string): Endpoints;
  /** Scopes always requested (e-mail and name). */
  scopes: string[];
  /** Client authentication at the token endpoint. */
  authScheme: AuthScheme;
  /** Send a PKCE challenge to the provider (required by some, e.g. twitter). */
  pkce: boolean;
  /** Extra authorization parameters (apple's response_mode=form_post ...). */
  authorizeParams?: Record<string, string>;
  /** Extra headers of the token request (notion wants a JSON body). */
  tokenHeaders?: Record<string, string>;
  /** The provider may not tell an e-mail address at all (snapchat). */
  emailOptional?: boolean;
  /**
   * The token answer may lack the ID token although the provider issues them
   * (google, without the `openid` scope): `fetchUser` then reads the
   * user-info endpoint. Otherwise a missing ID token fails the sign-in.
   */
  idTokenOptional?: boolean;
  /**
   * Query parameters of `/authorize` passed on to the provider under another
   * name, because the name is one of ours (workos: `workos_provider` is sent
   * as `provider`).
   */
  queryAliases?: Record<string, string>;
  /** How EXTERNAL_<NAME>_URL reads (default: an optional base-URL override). */
  urlSetting?: {
    /** Required when the provider is enabled (keycloak's realm URL). */
    required?: boolean;
    /** The value when unset. */
    default?: string;
    /** The setting's description in docs/settings.md. */
    doc?: string;
  };
  /**
   * Native sign-in with the provider's ID token (`grant_type=id_token`, auth-js
   * signInWithIdToken); absent for providers that cannot.
   */
  nativeIdToken?: NativeIdToken;
  /** Reads the user from the provider's answers. */
  fetchUser(ctx: UserInfoContext): Promise<ProviderUser>;
}

/** How a provider's ID tokens are accepted by the id_token grant. */
export interface NativeIdToken {
  /** Issuer and key set when they differ from the redirect flow's `endpoints(url).idToken`. */
  rules?(baseUrl: string): IdTokenRules;
  /** The token's `nonce` is the SHA-256 of the app's nonce, checked both-or-neither (GoTrue). */
  hashedNonce: boolean;
  /**
   * How the user is read: `spec` through the redirect flow's `fetchUser` with
   * the verified claims, `claims` straight from the standard claims (custom
   * claims kept), with `emailVerified` when the provider only issues confirmed
   * addresses.
   */
  user: "spec" | { claims: { emailVerified?: boolean } };
}

/** Raised for an unusable provider answer; `/callback` turns it into an error redirect. */
export class ProviderError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ProviderError";
  }
}

/** `base` without trailing slashes, or `fallback` when the override is unset. */
export function chooseBase(base: string, fallback: string): string {
  return (base || fallback).replace(/\/+$/, "");
}

/** Settings of one external provider (read by config/external.ts). */
export interface ProviderConfig {
  enabled: boolean;
  clientId: string;
  secret: string;
  redirectUri: string;
  /** Base URL override (self-hosted instances, realms, tests); "" when unset. */
  url: string;
}
