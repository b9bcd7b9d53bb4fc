/**
 * What the ported auth-js cases share: the registration of a case under its upstream name, the
 * instances of instances.ts (started once per test file, on first use), and the clients the
 * upstream suites build (lib/clients.ts and docker-tests/clients.ts there): the published
 * @supabase/auth-js of deno.json, with in-memory storage, pointed at our server.
 *
 *   upstream("GoTrueApi.test.ts", [
 *     ported("GoTrueAdminApi > User creation > createUser() should create a new user", async () => { ... }),
 *     differs("...", "why we answer otherwise", async () => { ... }),
 *   ]);
 *
 * `ported` and `differs` are the only two ways to declare a case; upstream_test.ts collects them
 * (without running them) to check that every upstream case is ported or listed in cases.ts as out
 * of scope, and writes the table of docs/upstream.md.
 */
import assert from "node:assert/strict";
import * as jose from "jose";
import { GoTrueAdminApi, GoTrueClient, type GoTrueClientOptions } from "@supabase/auth-js";
import { closeInstances, INSTANCES, startInstances } from "./instances.ts";

export { assert, INSTANCES, jose };

/** One ported case. */
export interface Case {
  /** The upstream name within its file: describe blocks and test, joined with " > ". */
  name: string;
  /** Set when our server deliberately answers otherwise: why. The case asserts our answer. */
  difference?: string;
  run(): Promise<void> | void;
}

/** A case as upstream_test.ts collects it. */
export interface CollectedCase {
  file: string;
  name: string;
  difference?: string;
  /** The test file that holds our port. */
  ours: string;
}

/** A case the server answers as GoTrue does (or that tests the client alone, as upstream's does). */
export function ported(name: string, run: () => Promise<void> | void): Case {
  return { name, run };
}

/** A case we deliberately answer otherwise; `reason` says why, `run` asserts our answer. */
export function differs(
  name: string,
  reason: string,
  run: () => Promise<void> | void,
): Case {
  return { name, difference: reason, run };
}

let started: Promise<void> | undefined;
/** The CLI's publishable (anon) API key, which upstream's clients send as `apikey`. */
let publishableKey = "";

async function start(): Promise<void> {
  await startInstances();
  const now = Math.floor(Date.now() / 1000);
  publishableKey = await cliKeyJwt({
    iss: "supabase-demo",
    role: "anon",
    iat: now,
    exp: now + 86400,
  });
}

/**
 * Registers the cases of one upstream file, one Deno test each named `<file> > <upstream name>`,
 * and a last test that stops the instances. `ours` is the registering module's import.meta.url;
 * `instances: false` for cases that talk to no server (upstream stubs `fetch` for them).
 */
export function upstream(
  file: string,
  ours: string,
  cases: Case[],
  opts: { instances?: boolean } = {},
): void {
  const sink = (globalThis as { __authJsCases?: CollectedCase[] }).__authJsCases;
  const here = ours.slice(ours.indexOf("tests/upstream/"));
  if (sink) {
    for (const c of cases) sink.push({ file, name: c.name, difference: c.difference, ours: here });
    return;
  }
  for (const c of cases) {
    Deno.test({
      name: `${file} > ${c.name}`,
      // auth-js keeps timers and broadcast channels of its own; the instances outlive a case.
      sanitizeOps: false,
      sanitizeResources: false,
      async fn() {
        if (opts.instances !== false) {
          started ??= start();
          await started;
        }
        await c.run();
      },
    });
  }
  if (opts.instances === false) return;
  Deno.test({
    name: `${file}: the instances stop`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const s = started;
      started = undefined;
      if (s) await s.then(closeInstances, () => {});
    },
  });
}

/** Storage in memory, as auth-js's MemoryStorage of the upstream clients. */
export class MemoryStorage {
  readonly items = new Map<string, string>();
  getItem(key: string): Promise<string | null> {
    return Promise.resolve(this.items.get(key) ?? null);
  }
  setItem(key: string, value: string): Promise<void> {
    this.items.set(key, value);
    return Promise.resolve();
  }
  removeItem(key: string): Promise<void> {
    this.items.delete(key);
    return Promise.resolve();
  }
}

let seq = 0;

/** Fresh credentials, as upstream's mockUserCredentials: an address, a number, a password. */
export function creds(): { email: string; phone: string; password: string } {
  const n = `${Date.now()}${++seq}${Math.floor(Math.random() * 1e6)}`;
  return {
    email: `u${n}-${crypto.randomUUID().slice(0, 8)}@example.com`,
    // upstream: "1" and ten digits, no "+"; random here so two cases never share one
    phone: `1${String(Math.floor(Math.random() * 1e10)).padStart(10, "0")}`,
    password: `Pw-${crypto.randomUUID().slice(0, 12)}`,
  };
}

/** The instances of instances.ts, by their upstream role. */
export type Instance = "cli" | "gotrue" | "autoconfirm" | "disabled" | "asymmetric";

/** An GoTrueClient of an instance (the CLI's by default) with in-memory storage and no auto refresh. */
export function client(
  opts: Partial<GoTrueClientOptions> & { instance?: Instance } = {},
): GoTrueClient {
  const { instance = "cli", ...rest } = opts;
  return new GoTrueClient({
    url: INSTANCES[instance],
    // The CLI's API gateway wants it; the server itself ignores it.
    headers: instance === "cli" ? { apikey: publishableKey } : {},
    autoRefreshToken: false,
    persistSession: true,
    storage: new MemoryStorage(),
    ...rest,
  });
}

/** The storage and storage key a client keeps its session under (protected in auth-js). */
export function storageOf(c: GoTrueClient): { storage: MemoryStorage; key: string } {
  const inner = c as unknown as { storage: MemoryStorage; storageKey: string };
  return { storage: inner.storage, key: inner.storageKey };
}

/** The CLI's published HS256 secret (its config.toml), which its instance verifies with. */
export const CLI_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long";
/** docker-compose's GOTRUE_JWT_SECRET. */
export const DOCKER_JWT_SECRET = "37c304f8-51aa-419a-a1af-06154e63707a";

/** A JWT signed with the CLI's RS256 signing key (instances.ts), as upstream signs its API keys. */
export async function cliKeyJwt(claims: Record<string, unknown>): Promise<string> {
  // key_ops names "verify" too, which WebCrypto refuses on a private key
  const { key_ops: _ops, ...jwk } = INSTANCES.signingKeys[0];
  const key = await jose.importJWK(jwk, "RS256");
  return await new jose.SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: jwk.kid })
    .sign(key);
}

/** An HS256 JWT with `secret` (the CLI's published one by default). */
export async function hs256Jwt(
  claims: Record<string, unknown>,
  secret = CLI_JWT_SECRET,
): Promise<string> {
  return await new jose.SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(secret));
}

/** The admin API of an instance with a service_role token (the CLI's: RS256; docker's: HS256). */
export async function serviceRole(instance: Instance = "cli"): Promise<GoTrueAdminApi> {
  const now = Math.floor(Date.now() / 1000);
  const token = instance === "cli"
    ? await cliKeyJwt({ iss: "supabase-demo", role: "service_role", iat: now, exp: now + 3600 })
    : await hs256Jwt({ role: "service_role", iat: now - 60 }, DOCKER_JWT_SECRET);
  return new GoTrueAdminApi({
    url: INSTANCES[instance],
    headers: { Authorization: `Bearer ${token}` },
  });
}

/** The CLI's admin API with a supabase_admin token (upstream's authAdminApiAutoConfirmEnabledClient). */
export async function supabaseAdmin(): Promise<GoTrueAdminApi> {
  const token = await cliKeyJwt({ sub: "1234567890", role: "supabase_admin" });
  return new GoTrueAdminApi({ url: INSTANCES.cli, headers: { Authorization: `Bearer ${token}` } });
}

/** A client of the CLI instance that signed a fresh user up (autoconfirm: it holds a session). */
export async function signedUp(
  opts: Partial<GoTrueClientOptions> = {},
): Promise<{ c: GoTrueClient; email: string; password: string; session: NonNullable<unknown> }> {
  const c = client(opts);
  const { email, password } = creds();
  const { data, error } = await c.signUp({ email, password });
  assert.equal(error, null, `sign-up: ${error?.message}`);
  assert.ok(data.session, "the CLI instance confirms at once and answers with a session");
  return { c, email, password, session: data.session };
}

/** Asserts each key of `shape` has that `typeof` in `value` (upstream's `expect.any(...)`). */
export function assertTypes(value: unknown, shape: Record<string, string>): void {
  const v = value as Record<string, unknown>;
  for (const [k, t] of Object.entries(shape)) {
    assert.equal(typeof v?.[k], t, `${k}: ${typeof v?.[k]} (${JSON.stringify(v?.[k])}), not ${t}`);
  }
}

/** The user fields a session's user carries, with their types (upstream's expectedUser). */
export const USER_SHAPE: Record<string, string> = {
  id: "string",
  email: "string",
  phone: "string",
  aud: "string",
  email_confirmed_at: "string",
  last_sign_in_at: "string",
  created_at: "string",
  updated_at: "string",
};

/** A fetch that records each request (URL, init, parsed JSON body) and answers with `answer`. */
export function recordingFetch(
  answer: (url: string, init: RequestInit | undefined) => Response | Promise<Response>,
): {
  fetch: typeof fetch;
  calls: { url: string; init?: RequestInit; body: Record<string, unknown> | null }[];
} {
  const calls: { url: string; init?: RequestInit; body: Record<string, unknown> | null }[] = [];
  const f = (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    let body: Record<string, unknown> | null = null;
    try {
      body = typeof init?.body === "string" ? JSON.parse(init.body) : null;
    } catch { /* not JSON */ }
    calls.push({ url, init, body });
    return Promise.resolve(answer(url, init));
  };
  return { fetch: f as typeof fetch, calls };
}

/** A JSON response. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

// deno-lint-ignore no-explicit-any
type Loose = any;

/** The client's private and protected members, which several upstream cases reach into. */
export function internals(c: GoTrueClient): Loose {
  return c as Loose;
}

/** Wraps a method of `target` to count its calls; `once` replaces the first call's result. */
export function spy(
  target: Loose,
  method: string,
  once?: (...args: unknown[]) => unknown,
): { calls: unknown[][]; restore(): void } {
  const original = target[method];
  const calls: unknown[][] = [];
  let pending = once;
  target[method] = function (this: unknown, ...args: unknown[]) {
    calls.push(args);
    if (pending) {
      const f = pending;
      pending = undefined;
      return f(...args);
    }
    return original.apply(this, args);
  };
  return {
    calls,
    restore() {
      target[method] = original;
    },
  };
}

/**
 * An access token that expired an hour ago, signed with a key nobody keeps (upstream uses one
 * of 2025 made the same way).
 */
export function expiredJwt(): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return hs256Jwt(
    {
      aud: "authenticated",
      exp: now - 3600,
      iat: now - 7200,
      iss: "https://example.com",
      sub: "1234567890",
      user_metadata: {},
      role: "authenticated",
    },
    crypto.randomUUID() + crypto.randomUUID(),
  );
}

/** What `console[level]` was given while `fn` ran (upstream spies on console the same way). */
export async function logged(
  level: "error" | "warn",
  fn: () => Promise<unknown>,
): Promise<unknown[][]> {
  const seen: unknown[][] = [];
  const original = console[level];
  console[level] = (...args: unknown[]) => void seen.push(args);
  try {
    await fn();
  } finally {
    console[level] = original;
  }
  return seen;
}
