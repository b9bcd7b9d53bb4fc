/** The server's name and version (from deno.json at build time). */
export const NAME = "authsvc";
export const VERSION = "0.1.0";
export const DESCRIPTION =
  "authsvc is a user registration and authentication API (GoTrue-compatible)";
