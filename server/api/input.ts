/**
 * Request parsing and validation. Every failure is a 4xx naming the field;
 * unknown members and nulls are ignored (auth-js sends `code_challenge: null`,
 * `gotrue_meta_security: {}` and the like).
 */
import type { Context } from "../../deps.ts";
import { ApiError, badRequest } from "./errors.ts";

/** A parsed JSON object body. */
export type Body = Record<string, unknown>;

const MAX_DEPTH = 32;

function depth(v: unknown, d = 0): number {
  if (d > MAX_DEPTH || v === null || typeof v !== "object") return d;
  let m = d;
  for (const x of Object.values(v as object)) {
    m = Math.max(m, depth(x, d + 1));
    if (m > MAX_DEPTH) break;
  }
  return m;
}

/**
 * The member (dotted path) of the first NUL character (U+0000) in a key or a
 * string, or undefined. PostgreSQL's text and jsonb cannot hold one, so such a
 * value is refused here, naming its member, rather than failing in the database.
 */
function nulMember(v: unknown, path: string, d = 0): string | undefined {
  if (typeof v === "string") return v.includes("\0") ? path || "body" : undefined;
  if (v === null || typeof v !== "object" || d > MAX_DEPTH) return undefined;
  for (const [k, x] of Object.entries(v as object)) {
    const at = path ? `${path}.${k}` : k;
    if (k.includes("\0")) return at;
    const hit = nulMember(x, at, d + 1);
    if (hit) return hit;
  }
  return undefined;
}

function refuseNul(body: Body): Body {
  const at = nulMember(body, "");
  if (at) throw badRequest(`${at.slice(0, 64)} must not contain a NUL character (\\u0000)`);
  return body;
}

/**
 * Reads a JSON object body. An empty body is `{}`. Malformed JSON, a body that
 * is not an object, or one nested deeper than 32 levels is a 400 bad_json; a
 * NUL character in any member is a 400 naming the member.
 * Form-encoded bodies are accepted too (GoTrue accepts them on /token).
 */
export async function readBody(c: Context): Promise<Body> {
  const type = (c.req.header("content-type") ?? "").toLowerCase();
  let text: string;
  try {
    const buf = new Uint8Array(await c.req.arrayBuffer());
    text = new TextDecoder("utf-8", { fatal: true }).decode(buf);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if ((e as Error)?.name === "BodyLimitError" || (e as { status?: number })?.status === 413) {
      throw e;
    }
    throw new ApiError(400, "bad_json", "Request body is not valid UTF-8");
  }
  if (text.trim() === "") return {};
  if (type.startsWith("application/x-www-form-urlencoded")) {
    return refuseNul(Object.fromEntries(new URLSearchParams(text)));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError(400, "bad_json", "Could not parse request body as JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ApiError(400, "bad_json", "Request body must be a JSON object");
  }
  if (depth(parsed) > MAX_DEPTH) {
    throw new ApiError(400, "bad_json", "Request body is nested too deeply");
  }
  return refuseNul(parsed as Body);
}

/** An optional string member; null/undefined give undefined; anything else but a string is a 400. */
export function optString(body: Body, name: string, maxLen = 4096): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw badRequest(`${name} must be a string`);
  if (v.length > maxLen) throw badRequest(`${name} is too long (at most ${maxLen} characters)`);
  return v;
}

/** A required non-empty string member. */
export function reqString(body: Body, name: string, maxLen = 4096): string {
  const v = optString(body, name, maxLen);
  if (v === undefined || v === "") throw badRequest(`${name} is required`);
  return v;
}

/** An optional boolean member. */
export function optBool(body: Body, name: string): boolean | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw badRequest(`${name} must be a boolean`);
  return v;
}

/** An optional JSON object member. */
export function optObject(body: Body, name: string): Record<string, unknown> | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw badRequest(`${name} must be a JSON object`);
  return v as Record<string, unknown>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID string. */
export function isUuid(v: unknown): v is string {
  return typeof v === "string" && UUID.test(v);
}

/** A path parameter that must be a UUID (400 naming it otherwise). */
export function uuidParam(c: Context, name: string): string {
  const v = c.req.param(name);
  if (!isUuid(v)) throw badRequest(`${name} must be a UUID`);
  return v.toLowerCase();
}

const EMAIL = /^[^\s@<>()[\],;:"\\]+@[^\s@<>()[\],;:"\\]+\.[^\s@<>()[\],;:"\\]+$/;

/**
 * Validates an e-mail address as GoTrue's `validateEmail` does: 400
 * validation_failed, "An email address is required" / "... is too long" /
 * "Unable to validate email address: invalid format". (GoTrue keeps
 * `email_address_invalid` for a mail its mailer refuses to deliver.)
 */
export function checkEmail(email: string): string {
  const e = email.trim();
  if (!e) throw badRequest("An email address is required");
  if (e.length > 255) throw badRequest("An email address is too long");
  if (!EMAIL.test(e)) throw badRequest("Unable to validate email address: invalid format");
  return e.toLowerCase();
}

/** `redirect_to` from the query string (auth-js puts it there) or the body. */
export function redirectToParam(c: Context, body: Body = {}): string | undefined {
  return c.req.query("redirect_to") ?? optString(body, "redirect_to") ??
    optString(body, "redirectTo");
}
