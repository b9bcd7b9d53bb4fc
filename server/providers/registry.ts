/**
 * The enabled providers (of specs.ts) and the two steps every one of them takes on the
 * client library: the authorization URL (`client.authCode.authorizeUrl`) and
 * the callback (`client.authCode.getToken`, ID-token verification, user info).
 */
import { type AccessToken, Client, type Logger as ClientLogger, OAuthError } from "../../mod.ts";
import type { Config, ProviderConfig, ProviderName } from "../config/mod.ts";
import type { Logger } from "../observe/log.ts";
import { verifyIdToken } from "./id_token.ts";
import { PROVIDER_SPECS, specOf } from "./specs.ts";
import { checkIdentifier, storableUser } from "./storable.ts";
import { type Endpoints, ProviderError, type ProviderSpec, type ProviderUser } from "./types.ts";

/** Query parameters of `/authorize` that are ours, never passed to the provider. */
const RESERVED = new Set([
  "provider",
  "scopes",
  "redirect_to",
  "code_challenge",
  "code_challenge_method",
  "skip_http_redirect",
  "client_id",
  "client_secret",
  "redirect_uri",
  "response_type",
  "response_mode",
  "state",
  "scope",
  "code",
  "nonce",
  "code_verifier",
  "grant_type",
]);

/** What the callback learned from the provider. */
export interface ProviderResult {
  user: ProviderUser;
  accessToken: string;
  refreshToken?: string;
}

/** One enabled provider with its client. */
export class ExternalProvider {
  readonly endpoints: Endpoints;
  readonly client: Client;

  constructor(
    readonly spec: ProviderSpec<ProviderName>,
    readonly settings: ProviderConfig,
    logger: ClientLogger,
    /** EXTERNAL_JWKS_COOLDOWN: least seconds between key-set fetches for an unknown kid. */
    readonly jwksCooldownSec = 30,
  ) {
    this.endpoints = spec.endpoints(settings.url);
    // EXTERNAL_<X>_CLIENT_ID may list several ids (GoTrue's form, for native apps' ID
    // tokens: providers/id_token_grant.ts); the redirect flow is the first one's.
    this.client = new Client(settings.clientId.split(",")[0].trim(), settings.secret, {
      authorizeUrl: this.endpoints.authorize,
      tokenUrl: this.endpoints.token,
      authScheme: spec.authScheme,
      redirectUri: settings.redirectUri,
      logger,
      connectionOpts: { timeout: 10_000 },
    });
  }

  /** The provider's authorization URL. */
  authorizeUrl(opts: {
    state: string;
    nonce: string;
    scopes?: string;
    codeChallenge?: string;
    extra?: URLSearchParams;
  }): string {
    const scopes = [...this.spec.scopes];
    for (const s of (opts.scopes ?? "").split(/[\s,]+/)) {
      if (s && !scopes.includes(s)) scopes.push(s);
    }
    const params: Record<string, unknown> = {};
    const aliases = this.spec.queryAliases ?? {};
    for (const [k, v] of opts.extra ?? []) {
      if (Object.hasOwn(aliases, k)) params[aliases[k]] = v;
      else if (!RESERVED.has(k.toLowerCase())) params[k] = v;
    }
    Object.assign(params, this.spec.authorizeParams, {
      state: opts.state,
      ...(scopes.length ? { scope: scopes.join(" ") } : {}),
      ...(this.endpoints.idToken && this.endpoints.idToken.nonce !== false
        ? { nonce: opts.nonce }
        : {}),
      ...(opts.codeChallenge
        ? { code_challenge: opts.codeChallenge, code_challenge_method: "S256" }
        : {}),
    });
    const url = new URL(this.client.authCode.authorizeUrl(params));
    // Spaces as %20: some providers (apple) do not read "+" in the query as a space.
    url.search = url.search.replaceAll("+", "%20");
    return url.href;
  }

  /**
   * Exchanges the code, verifies the ID token (when the provider issues
   * them) and reads the user.
   *
   * @throws {OAuthError} when the token endpoint refuses
   * @throws {ProviderError} for an unusable answer (bad ID token, no user id)
   */
  async complete(opts: {
    code: string;
    codeVerifier?: string;
    nonce: string;
    callback: URLSearchParams;
    now: Date;
  }): Promise<ProviderResult> {
    const token: AccessToken = await this.client.authCode.getToken(opts.code, {
      ...(opts.codeVerifier ? { code_verifier: opts.codeVerifier } : {}),
      ...(this.spec.tokenHeaders ? { headers: this.spec.tokenHeaders } : {}),
    });
    let idClaims: Record<string, unknown> | undefined;
    const idToken = token.params.id_token;
    if (this.endpoints.idToken && typeof idToken === "string") {
      idClaims = await verifyIdToken(idToken, {
        rules: this.endpoints.idToken,
        audience: this.settings.clientId.split(",").map((id) => id.trim()).filter(Boolean),
        nonce: opts.nonce,
        accessToken: token.token !== idToken ? token.token : undefined,
        now: opts.now,
        jwksCooldownSec: this.jwksCooldownSec,
      });
    } else if (this.endpoints.idToken && !this.spec.idTokenOptional) {
      throw new ProviderError(`${this.spec.name} sent no ID token`);
    }
    const user = await this.spec.fetchUser({
      client: this.client,
      token,
      endpoints: this.endpoints,
      settings: this.settings,
      idClaims,
      callback: opts.callback,
    });
    if (!user.id) throw new ProviderError(`${this.spec.name} did not tell the user's id`);
    checkIdentifier("access token", token.token);
    checkIdentifier("refresh token", token.refreshToken);
    return { user: storableUser(user), accessToken: token.token, refreshToken: token.refreshToken };
  }
}

/** The enabled providers of one configuration. */
export class ProviderRegistry {
  #providers = new Map<ProviderName, ExternalProvider>();

  constructor(config: Config, log: Logger) {
    const logger: ClientLogger = {
      debug: (...a: unknown[]) => log.debug(a.map(String).join(" ")),
      info: (...a: unknown[]) => log.info(a.map(String).join(" ")),
      warn: (...a: unknown[]) => log.warn(a.map(String).join(" ")),
      error: (...a: unknown[]) => log.error(a.map(String).join(" ")),
    };
    for (const [name, settings] of Object.entries(config.external.providers)) {
      if (!settings.enabled) continue;
      const spec = specOf(name as ProviderName);
      this.#providers.set(
        spec.name,
        new ExternalProvider(spec, settings, logger, config.external.jwksCooldownSec),
      );
    }
  }

  /** The enabled provider of that name, or undefined. */
  get(name: string): ExternalProvider | undefined {
    return this.#providers.get(name.toLowerCase() as ProviderName);
  }

  /** Whether `name` is one of the providers of specs.ts at all. */
  static known(name: string): name is ProviderName {
    return Object.hasOwn(PROVIDER_SPECS, name.toLowerCase());
  }
}

export { OAuthError, ProviderError };
