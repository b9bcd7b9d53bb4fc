/**
 * What the published OAuth client library is, for both of its builds
 * (scripts/build_jsr.ts, scripts/build_npm.ts): its name, entry points and
 * where people find its source and report problems. The version and licence
 * are deno.json's, the one place each is written.
 */
import denoJson from "../deno.json" with { type: "json" };

/** The package name on JSR and npm. */
export const NAME = "@authsvc/oauth2";
/** The version (deno.json's). */
export const VERSION: string = denoJson.version;
/** The licence (deno.json's; the text is LICENSE). */
export const LICENSE: string = denoJson.license;

/** Entry points: subpath to the module, relative to the repository root. */
export const EXPORTS: Record<string, string> = {
  ".": "./mod.ts",
  "./oidc": "./oidc.ts",
};

/** The source repository, its page of the library, and its issue tracker. */
export const REPOSITORY = "https://github.com/authsvc/authsvc";
export const HOMEPAGE = `${REPOSITORY}/tree/main/client#readme`;
export const BUGS = `${REPOSITORY}/issues`;
