/**
 * Every external provider this server signs in with, by name: the one list
 * the EXTERNAL_<NAME>_* settings, GET /settings and /authorize are read from.
 * Adding a provider is a module beside this one (a `ProviderSpec`) and a line
 * here.
 */
import { apple } from "./apple.ts";
import { azure } from "./azure.ts";
import { bitbucket } from "./bitbucket.ts";
import { discord } from "./discord.ts";
import { facebook } from "./facebook.ts";
import { figma } from "./figma.ts";
import { github } from "./github.ts";
import { gitlab } from "./gitlab.ts";
import { google } from "./google.ts";
import { keycloak } from "./keycloak.ts";
import { linkedin } from "./linkedin.ts";
import { notion } from "./notion.ts";
import { slack } from "./slack.ts";
import { snapchat } from "./snapchat.ts";
import { spotify } from "./spotify.ts";
import { twitch } from "./twitch.ts";
import { twitter } from "./twitter.ts";
import type { ProviderSpec } from "./types.ts";
import { workos } from "./workos.ts";

/** Every provider, by name (each spec's `name` is its key). */
export const PROVIDER_SPECS = {
  apple,
  azure,
  bitbucket,
  discord,
  facebook,
  figma,
  github,
  gitlab,
  google,
  keycloak,
  linkedin,
  notion,
  slack,
  snapchat,
  spotify,
  twitch,
  twitter,
  workos,
} satisfies Record<string, ProviderSpec>;

/** The name of an external provider. */
export type ProviderName = keyof typeof PROVIDER_SPECS;

/** Every provider's name, in alphabetical order. */
export const PROVIDERS = Object.keys(PROVIDER_SPECS) as readonly ProviderName[];

/** The spec of a provider, its `name` typed as the key it is listed under. */
export function specOf(name: ProviderName): ProviderSpec<ProviderName> {
  return PROVIDER_SPECS[name] as ProviderSpec<ProviderName>;
}

for (const name of PROVIDERS) {
  if (PROVIDER_SPECS[name].name !== name) {
    throw new Error(`provider spec ${name} is named ${PROVIDER_SPECS[name].name}`);
  }
}
