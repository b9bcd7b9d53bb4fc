/**
 * Helpers of the MFA tests: TOTP codes computed here (node:crypto HMAC,
 * independent of the server's WebCrypto code), a clock the test moves, and
 * signed-in `@supabase/auth-js` clients.
 */
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { GoTrueAdminApi, type GoTrueClient } from "../../helpers/deps.ts";
import { authJsClient } from "../../helpers/auth_js.ts";
import type { TestServer } from "../../helpers/server.ts";
import { uniqueEmail } from "../../helpers/http.ts";

export type Json = Record<string, unknown>;

/** Base32 (RFC 4648) to bytes. */
export function fromBase32(text: string): Uint8Array {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text.replace(/=+$/, "")) {
    value = (value << 5) | alphabet.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

/** The 6-digit TOTP (SHA-1, 30 s) of a base32 secret at `ms` (epoch milliseconds). */
export function totpAt(secret: string, ms: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(ms / 1000 / 30)));
  const mac = createHmac("sha1", fromBase32(secret)).update(counter).digest();
  const o = mac[mac.length - 1] & 15;
  const n = (mac.readUInt32BE(o) & 0x7fffffff) % 1_000_000;
  return String(n).padStart(6, "0");
}

/** A clock the test moves; starts at the middle of a 30 s TOTP step. */
export class TestClock {
  ms: number;
  constructor() {
    this.ms = Math.floor(Date.now() / 30_000) * 30_000 + 15_000;
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

/** An auth-js client of the test server, keeping its session in memory. */
export function client(srv: TestServer): GoTrueClient {
  return authJsClient(srv.url);
}

/** An admin client (service_role token). */
export async function admin(srv: TestServer): Promise<GoTrueAdminApi> {
  return new GoTrueAdminApi({
    url: srv.url,
    headers: { Authorization: `Bearer ${await srv.serviceRoleToken()}` },
  });
}

export const PASSWORD = "mfa-password-1";

/** Signs a new user up (the server needs MAILER_AUTOCONFIRM) and returns a signed-in client. */
export async function signedUp(srv: TestServer, address = uniqueEmail("mfa")) {
  const c = client(srv);
  const { data, error } = await c.signUp({ email: address, password: PASSWORD });
  if (error || !data.session) throw new Error(`sign-up failed: ${error?.message}`);
  return { client: c, email: address, userId: data.user!.id };
}

/** Another signed-in client for an existing user (a second device: a new aal1 session). */
export async function signedIn(srv: TestServer, address: string): Promise<GoTrueClient> {
  const c = client(srv);
  const { error } = await c.signInWithPassword({ email: address, password: PASSWORD });
  if (error) throw new Error(`sign-in failed: ${error.message}`);
  return c;
}

/** The payload of a JWT. */
export function claims(jwt: string): Json {
  return JSON.parse(atob(jwt.split(".")[1].replaceAll("-", "+").replaceAll("_", "/")));
}

/** A fetch against the server with a bearer token, returning status and JSON body. */
export async function api(
  srv: TestServer,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await srv.fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** The access token of a client's current session. */
export async function accessToken(c: GoTrueClient): Promise<string> {
  const { data } = await c.getSession();
  if (!data.session) throw new Error("no session");
  return data.session.access_token;
}

/** Base env of the MFA tests. */
export const MFA_ENV: Record<string, string> = { AUTHSVC_MAILER_AUTOCONFIRM: "true" };
