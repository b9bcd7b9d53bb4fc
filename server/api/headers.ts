/** Adding headers to a response a handler has already made. */
import type { Ctx } from "./context.ts";
import { type TokenSet, tokenSetJson } from "../auth/sessions.ts";

/**
 * Sets (`set`) and appends (`append`) headers on `c.res` in place; a response
 * whose headers are immutable (Response.redirect, a fetched one) is copied
 * first. Middleware sets its headers before the handler runs (`c.header`) so
 * that this is only the path of handlers that return a Response of their own.
 */
export function setHeaderAfter(
  c: Ctx,
  set: Record<string, string>,
  append: Record<string, string> = {},
): void {
  let res = c.res;
  try {
    apply(res.headers, set, append);
  } catch {
    res = new Response(res.body, res);
    apply(res.headers, set, append);
    // hono merges the old response's headers into a replacement: clear it first
    c.res = undefined as unknown as Response;
    c.res = res;
  }
}

function apply(h: Headers, set: Record<string, string>, append: Record<string, string>): void {
  for (const k in set) h.set(k, set[k]);
  for (const k in append) h.append(k, append[k]);
}

const JSON_TYPE = { "content-type": "application/json" } as const;

/**
 * A 200 answer of a token set (what `c.json(set)` answers, with the same headers), its user
 * spliced in as the database built it where the set carries that text (auth/sessions.ts
 * tokenSetJson).
 */
export function tokenSetResponse(c: Ctx, set: TokenSet): Response {
  return c.body(tokenSetJson(set), 200, JSON_TYPE);
}
