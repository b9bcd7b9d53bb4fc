/**
 * Ways to sign in: e-mail, phone, anonymous, and the external OAuth / OpenID
 * Connect providers, each with `AUTHSVC_EXTERNAL_<NAME>_*` settings shaped by
 * its spec (server/providers/specs.ts).
 */
import { PROVIDER_SPECS, type ProviderName, PROVIDERS } from "../providers/specs.ts";
import type { ProviderConfig } from "../providers/types.ts";
export type { ProviderConfig };
import type { ConfigReader, SectionDoc } from "./reader.ts";

export { type ProviderName, PROVIDERS };

export const EXTERNAL_SECTION: SectionDoc = {
  title: "Sign-in methods and external providers",
  about:
    "E-mail, phone and anonymous sign-in, and one group of settings per OAuth / OpenID Connect provider ([server/providers.md](server/providers.md), [id_token.md](id_token.md)).",
};

/** The sign-in methods' settings. */
export interface ExternalConfig {
  emailEnabled: boolean;
  phoneEnabled: boolean;
  anonymousUsersEnabled: boolean;
  providers: Record<ProviderName, ProviderConfig>;
  /** Least time between two fetches of a provider's key set for an unknown `kid`. */
  jwksCooldownSec: number;
}

export function readExternal(r: ConfigReader): ExternalConfig {
  return {
    emailEnabled: r.bool("EXTERNAL_EMAIL_ENABLED", {
      default: true,
      doc: "e-mail sign-up and sign-in",
    }),
    phoneEnabled: r.bool("EXTERNAL_PHONE_ENABLED", {
      default: false,
      doc: "phone sign-up and sign-in",
    }),
    anonymousUsersEnabled: r.bool("EXTERNAL_ANONYMOUS_USERS_ENABLED", {
      doc: "anonymous sign-ins",
    }),
    providers: readProviders(r),
    jwksCooldownSec: r.seconds("EXTERNAL_JWKS_COOLDOWN", {
      default: 30,
      doc: "least time between key-set fetches for an unknown ID-token kid (docs/id_token.md)",
    }),
  };
}

function readProviders(r: ConfigReader): Record<ProviderName, ProviderConfig> {
  const out = {} as Record<ProviderName, ProviderConfig>;
  for (const p of PROVIDERS) {
    const X = `EXTERNAL_${p.toUpperCase()}`;
    const urlSetting = PROVIDER_SPECS[p].urlSetting ?? {};
    const enabled = r.bool(`${X}_ENABLED`, { doc: `enable sign-in with ${p}` });
    const pc: ProviderConfig = {
      enabled,
      clientId: r.string(`${X}_CLIENT_ID`, {
        required: enabled,
        doc: `${p} client id(s), comma-separated: docs/id_token.md`,
      }),
      secret: r.string(`${X}_SECRET`, { required: enabled, doc: `${p} client secret` }),
      redirectUri: r.string(`${X}_REDIRECT_URI`, {
        required: enabled,
        doc: `where ${p} returns with code and state (this server's /callback)`,
      }),
      url: r.url(`${X}_URL`, {
        required: enabled && urlSetting.required === true,
        default: urlSetting.default ?? "",
        doc: urlSetting.doc ?? `base URL override for ${p} (self-hosted instances, tests)`,
      }),
    };
    // Kept as written (a trailing slash counts at the provider), but it must be a URL.
    const protocol = URL.parse(pc.redirectUri)?.protocol;
    if (pc.redirectUri && protocol !== "http:" && protocol !== "https:") {
      r.problems.push(
        `${r.name(`${X}_REDIRECT_URI`)}: expected an http(s) URL, got "${pc.redirectUri}"`,
      );
    }
    out[p] = pc;
  }
  return out;
}
