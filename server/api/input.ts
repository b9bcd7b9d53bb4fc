/**
 * Request parsing and validation. Every failure is a 4xx naming the field;
 * unknown members and nulls are ignored (auth-js sends `code_challenge: null`,
 * `gotrue_meta_security: {}` and the like).
 */
import type { Context } from "../../deps.ts";
import { normalizeEmail } from "../auth/users.ts";
import { ApiError, AuthError, badRequest } from "./errors.ts";
import { isUuid } from "../util/uuid.ts";
import { checkObjectBounds } from "../auth/metadata.ts";

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

/** Why a string cannot be stored (PostgreSQL's text and jsonb refuse both), or undefined. */
function illFormed(v: string): string | undefined {
  if (v.includes("\0")) return "must not contain a NUL character (\\u0000)";
  if (!v.isWellFormed()) {
    return "must be well-formed Unicode (it contains an unpaired UTF-16 surrogate)";
  }
  return undefined;
}

/**
 * The first key or string of a parsed body that PostgreSQL could not store: a
 * NUL character (U+0000) or an unpaired UTF-16 surrogate (`"\ud800"` is valid
 * JSON; stored as text it silently becomes U+FFFD, so two different inputs
 * would become one identifier, and jsonb refuses it outright). Answered with
 * its dotted member path, so the 400 names the field.
 */
function illFormedMember(
  v: unknown,
  path: string,
  d = 0,
): { at: string; why: string } | undefined {
  if (typeof v === "string") {
    const why = illFormed(v);
    return why ? { at: path || "body", why } : undefined;
  }
  if (v === null || typeof v !== "object" || d > MAX_DEPTH) return undefined;
  for (const [k, x] of Object.entries(v as object)) {
    const at = path ? `${path}.${k}` : k;
    const why = illFormed(k);
    if (why) return { at: printable(at), why: `(a member name) ${why}` };
    const hit = illFormedMember(x, at, d + 1);
    if (hit) return hit;
  }
  return undefined;
}

/** A field name as it can be quoted in an error message (no NUL, no lone surrogate, short). */
function printable(name: string): string {
  return name.replaceAll("\0", "\\u0000").toWellFormed().slice(0, 64);
}

function refuseIllFormed(body: Body): Body {
  const hit = illFormedMember(body, "");
  if (hit) throw badRequest(`${printable(hit.at)} ${hit.why}`);
  return body;
}

/**
 * Every query parameter of the request well-formed: a NUL character (`%00`)
 * is refused with a 400 naming the parameter, so no handler passes it on to
 * PostgreSQL (query strings cannot carry lone surrogates: percent-decoding
 * never yields one). Called for every request by the first middleware after
 * CORS (app.ts); it costs one substring test on requests without `%00`.
 */
export function checkQuery(url: string): void {
  const q = url.indexOf("?");
  if (q >= 0 && url.indexOf("%00", q) >= 0) {
    for (const [k, v] of new URL(url).searchParams) {
      const why = illFormed(k)
        ? "(a parameter name) must not contain a NUL character"
        : illFormed(v);
      if (why) throw badRequest(`query parameter ${printable(k)} ${why}`);
    }
  }
}

const ABANDONED = "The client closed the connection while sending the request body";

/**
 * The client closed the connection while its body was being read: nobody will read an answer
 * and nothing went wrong here. app.ts answers it 499 and logs it at debug level, never as an
 * error with a stack trace.
 */
export class BodyAbandonedError extends Error {
  constructor(options?: ErrorOptions) {
    super(ABANDONED, options);
    this.name = "BodyAbandonedError";
  }
}

/** Errors Deno's HTTP server gives a body read when the connection went away under it. */
const CONNECTION_GONE = [
  Deno.errors.BadResource,
  Deno.errors.ConnectionReset,
  Deno.errors.ConnectionAborted,
  Deno.errors.BrokenPipe,
  Deno.errors.UnexpectedEof,
  Deno.errors.Interrupted,
  Deno.errors.Http,
];

/**
 * What a failed read of a request body becomes: BodyAbandonedError when the connection went
 * away under it, a 400 otherwise (a malformed chunked encoding), the size limit's 413 as it is.
 */
export function bodyReadFailure(e: unknown): Error {
  if (e instanceof AuthError) return e;
  if ((e as Error)?.name === "BodyLimitError" || (e as { status?: number })?.status === 413) {
    return e as Error;
  }
  if (CONNECTION_GONE.some((cls) => e instanceof cls)) return new BodyAbandonedError({ cause: e });
  return new ApiError(400, "bad_json", "Request body could not be read");
}

/** Decodes whole bodies (never `stream`, so it keeps no state between calls). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a JSON object body. An empty body is `{}`. Malformed JSON, a body that
 * is not an object, or one nested deeper than 32 levels is a 400 bad_json; a
 * NUL character or an unpaired surrogate in any key or string is a 400
 * validation_failed naming the member.
 * Form-encoded bodies are accepted too (GoTrue accepts them on /token).
 */
export async function readBody(c: Context): Promise<Body> {
  let buf: Uint8Array;
  try {
    buf = new Uint8Array(await c.req.arrayBuffer());
  } catch (e) {
    throw bodyReadFailure(e);
  }
  return bodyOf(c.req.header("content-type") ?? "", buf);
}

/** readBody's parse of the bytes of a body sent with Content-Type `contentType`. */
export function bodyOf(contentType: string, buf: Uint8Array): Body {
  const type = contentType.toLowerCase();
  let text: string;
  try {
    text = UTF8.decode(buf);
  } catch {
    throw new ApiError(400, "bad_json", "Request body is not valid UTF-8");
  }
  if (text.trim() === "") return {};
  if (type.startsWith("application/x-www-form-urlencoded")) {
    return refuseIllFormed(Object.fromEntries(new URLSearchParams(text)));
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
  return refuseIllFormed(parsed as Body);
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

export { checkObjectBounds, MAX_OBJECT_BYTES, MAX_OBJECT_DEPTH } from "../auth/metadata.ts";

/** An optional JSON object member, bounded (checkObjectBounds). */
export function optObject(body: Body, name: string): Record<string, unknown> | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw badRequest(`${name} must be a JSON object`);
  checkObjectBounds(name, v as Record<string, unknown>);
  return v as Record<string, unknown>;
}

export { isUuid };

/** A path parameter that must be a UUID (400 naming it otherwise). */
export function uuidParam(c: Context, name: string): string {
  const v = c.req.param(name);
  if (!isUuid(v)) throw badRequest(`${name} must be a UUID`);
  return v.toLowerCase();
}

const EMAIL = /^[^\s@<>()[\],;:"\\]+@[^\s@<>()[\],;:"\\]+\.[^\s@<>()[\],;:"\\]+$/;

/** Control (Cc), format (Cf: bidi and zero-width marks) and lone surrogate (Cs) characters. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}]/u;

/**
 * Validates an e-mail address as GoTrue's `validateEmail` does (400
 * validation_failed, "An email address is required" / "... is too long" /
 * "Unable to validate email address: invalid format"; GoTrue keeps
 * `email_address_invalid` for a mail its mailer refuses to deliver) and
 * answers its canonical form, the one every lookup and the unique index
 * compare (normalizeEmail: trimmed, lower case, NFC). Also refused as an
 * invalid format: a control character, a format character (bidi or
 * zero-width marks, which make two addresses look alike) or an unpaired
 * surrogate (which storage would turn into U+FFFD, merging `x\ud800@…` and
 * `x\udfff@…` into one account).
 */
export function checkEmail(email: string): string {
  const e = email.trim();
  if (!e) throw badRequest("An email address is required");
  if (e.length > 255) throw badRequest("An email address is too long");
  if (!EMAIL.test(e) || INVISIBLE.test(e)) {
    throw badRequest("Unable to validate email address: invalid format");
  }
  return normalizeEmail(e);
}

/** `redirect_to` from the query string (auth-js puts it there) or the body. */
export function redirectToParam(c: Context, body: Body = {}): string | undefined {
  return c.req.query("redirect_to") ?? optString(body, "redirect_to") ??
    optString(body, "redirectTo");
}
