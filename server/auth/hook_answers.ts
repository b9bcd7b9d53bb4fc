/**
 * Reading what an auth hook answers (auth/hooks.ts), as GoTrue reads it: the
 * body of an HTTP answer (application/json, at most 200 KB, a JSON object or
 * empty) and the `{"error"}` answer; and, for the operator, what a hook did
 * wrong in words (HookProblem, the `hook_failed` audit entry).
 */
import { AuthError } from "./errors.ts";
import type { HookName } from "../config/hooks.ts";

/** Largest hook answer read (GoTrue: 200 KB). */
export const HOOK_RESPONSE_LIMIT = 200 * 1024;

/** A hook's answer: the parsed JSON object, or null for an empty answer (204). */
export type HookOutput = Record<string, unknown> | null;

/**
 * What a hook did wrong, in words for the operator (the `problem` of its
 * `hook_failed` audit entry); the cause of the AuthError the client gets.
 */
export class HookProblem extends Error {
  override name = "HookProblem";
}

/** 500 unexpected_failure: the hook failed or answered something unusable (`problem`). */
export function hookFailed(message: string, problem?: string): AuthError {
  return new AuthError(
    "unexpected_failure",
    message,
    problem ? { cause: new HookProblem(problem) } : {},
  );
}

/** What went wrong with a hook, for the operator: its HookProblem, else the error's own text. */
export function problemOf(e: unknown): string {
  for (let c: unknown = e; c instanceof Error; c = c.cause) {
    if (c instanceof HookProblem) return c.message;
  }
  return e instanceof Error ? e.message : String(e);
}

/** A hook's URI as the audit log shows it: no user, password or query (they may hold secrets). */
export function shownUri(uri: string): string {
  try {
    const u = new URL(uri);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "";
  }
}

/** A hook that failed or answered nonsense (the `hook_failed` audit entry's traits). */
export interface HookProblemReport {
  hook: HookName;
  uri: string;
  problem: string;
  ms: number;
}

/** `{"error": {"http_code", "message"}}` in an answer becomes that error. */
export function errorOf(out: unknown): AuthError | null {
  if (!out || typeof out !== "object") return null;
  const e = (out as { error?: unknown }).error;
  if (!e || typeof e !== "object") return null;
  const { http_code, message } = e as { http_code?: unknown; message?: unknown };
  if (typeof message !== "string" || message === "") return null;
  // A 4xx the hook asks for refuses the request with that status (api/errors.ts statusOf), as
  // GoTrue does; anything else is a failure (500, GoTrue's answer to a missing http_code).
  if (typeof http_code === "number" && http_code >= 400 && http_code < 500) {
    return new AuthError("validation_failed", message, {
      situation: "hook",
      hookHttpCode: http_code,
    });
  }
  return hookFailed(message);
}

export function contentTypeOf(header: string | null): string {
  return (header ?? "").split(";")[0].trim().toLowerCase();
}

/** An answer's body, read up to HOOK_RESPONSE_LIMIT bytes (`over` when there was more). */
export async function readLimited(res: Response): Promise<{ text: string; over: boolean }> {
  const reader = res.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.length > HOOK_RESPONSE_LIMIT) {
      await reader.cancel();
      chunks.push(value.subarray(0, HOOK_RESPONSE_LIMIT - size));
      size = HOOK_RESPONSE_LIMIT;
      return { text: decode(chunks, size), over: true };
    }
    size += value.length;
    chunks.push(value);
  }
  return { text: decode(chunks, size), over: false };
}

function decode(chunks: Uint8Array[], size: number): string {
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.length;
  }
  return new TextDecoder().decode(all);
}

/**
 * A 200/202 answer as GoTrue reads it: application/json of at most
 * HOOK_RESPONSE_LIMIT bytes, empty (no output) or a JSON object.
 *
 * @throws {AuthError} GoTrue's errors, with the HookProblem as cause
 */
export function answerOf(contentTypeHeader: string | null, body: { text: string; over: boolean }) {
  const type = contentTypeOf(contentTypeHeader);
  if (type !== "application/json") {
    throw new AuthError(
      "hook_payload_invalid_content_type",
      type
        ? `Invalid JSON response. Received content-type: ${type}`
        : "Invalid Content-Type: Missing Content-Type header",
      {
        cause: new HookProblem(
          `answered ${type ? `Content-Type ${type}` : "without a Content-Type"}, ` +
            "expected application/json",
        ),
      },
    );
  }
  if (body.over) {
    throw new AuthError(
      "hook_payload_over_size_limit",
      `Payload size exceeded size limit of ${HOOK_RESPONSE_LIMIT} bytes`,
      { cause: new HookProblem(`answered more than ${HOOK_RESPONSE_LIMIT} bytes`) },
    );
  }
  return parseAnswer(body.text);
}

/** What a JSON value is, in words ("an array", "the string \"ok\""). */
export function jsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.slice(0, 40))}`;
  return `a ${typeof v}`;
}

/** An HTTP hook's answer body: null when empty, else a JSON object. */
export function parseAnswer(text: string): HookOutput {
  if (text.trim() === "") return null;
  let out: unknown;
  try {
    out = JSON.parse(text);
  } catch {
    throw hookFailed(
      "Error unmarshaling JSON output.",
      `answered invalid JSON: ${JSON.stringify(text.slice(0, 60))}`,
    );
  }
  if (typeof out !== "object" || out === null || Array.isArray(out)) {
    throw hookFailed(
      "Hook answered something other than a JSON object",
      `answered ${jsonKind(out)}, expected a JSON object`,
    );
  }
  return out as Record<string, unknown>;
}
