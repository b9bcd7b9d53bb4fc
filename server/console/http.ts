/**
 * Small HTTP helpers of the console (console/routes.ts): cookie attributes,
 * its error answer, passing the API's answer on, and token utilities.
 */
import type { Ctx } from "../api/context.ts";

/** The path every console cookie is scoped to. */
export const PATH = "/console/";

/** Whether the console is opened on this machine (its cookies need not be Secure there). */
function isLocalHost(c: Ctx): boolean {
  const host = (c.req.header("host") ?? new URL(c.req.url).host).toLowerCase();
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0];
  return name === "localhost" || name.endsWith(".localhost") || name === "[::1]" ||
    /^127\.\d+\.\d+\.\d+$/.test(name);
}

/** The attributes of every console cookie. */
export function cookieOpts(c: Ctx, maxAge?: number) {
  return {
    path: PATH,
    httpOnly: true,
    secure: !isLocalHost(c),
    sameSite: "Strict" as const,
    ...(maxAge ? { maxAge } : {}),
  };
}

/** A random token of 32 bytes, base64url. */
export function randomToken(): string {
  const b = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The payload of a JWT the server itself issued (only read, never trusted for access). */
export function payloadOf(jwt: string): Record<string, unknown> {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part));
  } catch {
    return {};
  }
}

/** The console's error answer, in the API's error body. */
export function fail(c: Ctx, status: number, errorCode: string, msg: string): Response {
  return c.json({ code: status, error_code: errorCode, msg }, status as 400);
}

/** The API's answer as the console's, keeping the cookies `c` set; only `names` headers pass. */
export async function pass(
  c: Ctx,
  res: Response,
  names = ["content-type", "retry-after"],
): Promise<Response> {
  const headers: Record<string, string> = {};
  for (const h of names) {
    const v = res.headers.get(h);
    if (v) headers[h] = v;
  }
  return c.body(await res.arrayBuffer(), res.status as 200, headers);
}

/** Constant-time comparison of two non-empty strings. */
export function sameString(a: string, b: string): boolean {
  if (a.length !== b.length || !a) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}

/**
 * A token read from a cookie, or "" when it cannot be one: anything but printable ASCII (a NUL,
 * a space, a non-Latin-1 character) would not even fit the Authorization header it goes into.
 */
export function tokenOf(v: string | undefined): string {
  return v !== undefined && v.length <= 16_384 && /^[\x21-\x7e]+$/.test(v) ? v : "";
}
