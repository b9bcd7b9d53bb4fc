/**
 * The one HTTP helper of the server tests: send a request to a test server
 * (or a base URL) and read the answer as a user of the API would see it.
 *
 * ```ts
 * const r = await call(srv, "POST", "/signup", { body: { email: uniqueEmail("s"), password } });
 * const me = await call(srv, "GET", "/user", { token: r.body.access_token as string });
 * ```
 */

/** A JSON object as the API answers it. */
export type Json = Record<string, unknown>;

/** Something requests can be sent to: a test server, or a base URL such as `http://127.0.0.1:8081`. */
export type Target = { fetch(path: string, init?: RequestInit): Promise<Response> } | string;

/** What `call` sends besides the method and the path. */
export interface CallOptions {
  /** Sent as JSON, with `content-type: application/json`. */
  body?: unknown;
  /** Sent as it is, with no content type unless `headers` give one (malformed input). */
  raw?: string | Uint8Array<ArrayBuffer>;
  /** Sent as `Authorization: Bearer <token>` (an empty string sends none). */
  token?: string;
  /** More headers; they win over the two above. */
  headers?: Record<string, string>;
  /** Default `manual`: the test sees the redirect the server answered, not where it leads. */
  redirect?: RequestRedirect;
  signal?: AbortSignal;
}

/** The answer: status, the body parsed as JSON (`{}` when empty or not JSON), headers, the raw text. */
export interface CallResult {
  status: number;
  body: Json;
  headers: Headers;
  /** The body as received. */
  text: string;
}

/** Sends one request and reads the whole answer. */
export async function call(
  target: Target,
  method: string,
  path: string,
  opts: CallOptions = {},
): Promise<CallResult> {
  const headers = new Headers();
  if (opts.body !== undefined && opts.raw === undefined) {
    headers.set("content-type", "application/json");
  }
  if (opts.token) headers.set("authorization", `Bearer ${opts.token}`);
  for (const [k, v] of Object.entries(opts.headers ?? {})) headers.set(k, v);
  const init: RequestInit = {
    method,
    headers,
    body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
    redirect: opts.redirect ?? "manual",
    signal: opts.signal,
  };
  const res = typeof target === "string"
    ? await fetch(`${target}${path}`, init)
    : await target.fetch(path, init);
  const text = await res.text();
  let body: Json = {};
  try {
    if (text) body = JSON.parse(text);
  } catch { /* not JSON: `text` has it */ }
  return { status: res.status, body, headers: res.headers, text };
}

/** A unique e-mail address for one test: `<tag>-<8 random hex digits>@example.com`. */
export function uniqueEmail(tag = "u"): string {
  return `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;
}

/** The `Authorization` header of a bearer token. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
