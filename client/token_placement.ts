/**
 * Where an access token goes on a request (RFC 6750 §2): the Authorization
 * header, the query or a form body, by the token's `mode`.
 * @module
 */
import type { RequestOptions } from "./options.ts";
import {
  PLACEMENTS,
  type TokenMode,
  type TokenPlacement,
  type TokenTransmission,
} from "./token_options.ts";

/** The Authorization header of `token` (`header_format`, default `Bearer %s`). */
export function authorizationHeader(
  token: string,
  options: TokenTransmission,
): { Authorization: string } {
  return { Authorization: options.header_format.replace("%s", token) };
}

/** The placement `mode` gives for `verb`. */
export function placementFor(mode: TokenMode, verb: string): TokenPlacement {
  const placement = typeof mode === "function"
    ? mode(verb)
    : typeof mode === "object"
    ? mode[verb] ?? mode[verb.toUpperCase()] ?? "header"
    : mode;
  if (!PLACEMENTS.has(placement)) {
    throw new TypeError(`"mode" gave "${placement}" for ${verb}; use header, query or body`);
  }
  return placement;
}

/**
 * A copy of `opts` carrying `token` at `placement`.
 *
 * @throws {TypeError} for a body placement on GET/HEAD (fetch sends no body
 *   there, so the token would silently be left out) or with a byte body
 */
export function withToken(
  token: string,
  options: TokenTransmission,
  placement: TokenPlacement,
  verb: string,
  opts: RequestOptions,
): RequestOptions {
  const o: RequestOptions = { ...opts };
  const name = options.param_name;
  switch (placement) {
    case "header":
      o.headers = { ...opts.headers, ...authorizationHeader(token, options) };
      break;
    case "query":
      o.params = { ...opts.params, [name]: token };
      break;
    case "body":
      if (verb === "get" || verb === "head") {
        throw new TypeError(
          `"mode" body cannot carry the token on ${verb.toUpperCase()}; use header or query`,
        );
      }
      if (typeof opts.body === "string") {
        o.body = `${opts.body}${opts.body ? "&" : ""}${new URLSearchParams({ [name]: token })}`;
      } else if (opts.body instanceof Uint8Array) {
        throw new TypeError(`"body" cannot carry the token as bytes; use a record or a string`);
      } else {
        o.body = { ...opts.body, [name]: token };
      }
      break;
  }
  return o;
}
