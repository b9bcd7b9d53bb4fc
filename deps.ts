/**
 * The one place where third-party modules enter the server (re-exports).
 * The OAuth client library (`mod.ts`, `client/`) uses none: it runs on web
 * standards only, so it works unchanged in Deno, Node and browsers.
 * Test-only peers (SMTP server, mail parser, OpenID provider, auth-js) are
 * re-exported by `tests/helpers/deps.ts`.
 */
export { Hono } from "hono";
export type { Context, MiddlewareHandler } from "hono";
export { HTTPException } from "hono/http-exception";
export * as jose from "jose";
export { default as postgres } from "postgres";
export { PGlite } from "@electric-sql/pglite";
export { default as nodemailer } from "nodemailer";
export { parse } from "dotenv";
export { argon2Verify, bcrypt, bcryptVerify } from "hash-wasm";
