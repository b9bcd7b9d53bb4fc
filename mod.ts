/**
 * OAuth 2.0 client library (placeholder until the client lands).
 * @module
 */
/** Library version. */
export const VERSION = "0.1.0";
