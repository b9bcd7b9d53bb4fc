/** The server's name and version; the version is deno.json's, the one place it is written. */
import denoJson from "../deno.json" with { type: "json" };

export const NAME = "authsvc";
export const VERSION: string = denoJson.version;
export const DESCRIPTION =
  "authsvc is a user registration and authentication API (GoTrue-compatible)";
