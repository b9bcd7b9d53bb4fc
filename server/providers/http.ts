/**
 * Reading a provider's API with the access token, through the client
 * library's `AccessToken.get` (the token goes in the Authorization header).
 */
import type { RequestOptions } from "../../mod.ts";
import { ProviderError, type UserInfoContext } from "./types.ts";

/** GETs `url` with the user's token and returns the JSON object (or array) it answers. */
export async function getJson<T = Record<string, unknown>>(
  ctx: UserInfoContext,
  url: string,
  opts: Pick<RequestOptions, "headers" | "params"> = {},
): Promise<T> {
  let res;
  try {
    res = await ctx.token.get(url, {
      ...opts,
      headers: { Accept: "application/json", "User-Agent": "authsvc", ...opts.headers },
      parse: "json",
      snaky: false,
    });
  } catch (e) {
    throw new ProviderError(`user info request failed: ${errText(e)}`, {
      cause: e,
    });
  }
  const parsed = res.parsed;
  if (parsed === null || typeof parsed !== "object") {
    throw new ProviderError(`user info answer is not JSON (status ${res.status})`);
  }
  return parsed as T;
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message.split("\n")[0].slice(0, 200) : String(e);
}

/** A string member, or undefined. */
export function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : undefined;
}

/** A member that is true or the string "true" (apple and linkedin send strings). */
export function truthy(v: unknown): boolean {
  return v === true || v === "true" || v === 1 || v === "1";
}

/** A nested object member, or {}. */
export function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v)
    ? v as Record<string, unknown>
    : {};
}
