/**
 * The conformance suite's shared parts: cases ported from GoTrue's own API
 * tests (supabase/auth `internal/api/*_test.go`, commit in UPSTREAM_COMMIT),
 * run over HTTP against a real server, a real SMTP server and, where the
 * upstream case needs SMS, a local SMS gateway fake.
 *
 *   conformance("signup_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
 *     ported("TestSignupTwice", async (e) => { ... }),
 *     differs("TestX/desc", "why we answer differently", async (e) => { ... }),
 *   ]);
 *
 * `conformance` registers one Deno test per group, sharing one server (as the
 * upstream suite shares its set-up), and one test step per upstream case,
 * named "<file> <Go test function>[/<subcase>]". Every case uses its own
 * addresses (`e.email()`, `e.phone()`), so the order of cases does not matter.
 * `ported` and `differs` are the only two ways to declare a case: the compat
 * test (compat_test.ts) counts them for docs/compat.md.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer, type TestServerOptions } from "../helpers/server.ts";
import { call } from "../helpers/http.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { type SmsFake, startSmsFake } from "../helpers/sms_fakes.ts";
import { TestClock } from "../server/phone/_helpers.ts";
import { totpAt } from "../server/mfa/_helpers.ts";

export { assert, TestClock, totpAt };

/** The supabase/auth commit the cases were read at. */
export const UPSTREAM_COMMIT = "bc32168e";

// deno-lint-ignore no-explicit-any
export type J = any;

/** An HTTP answer: status, parsed JSON body (or {}), headers, raw text. */
export interface Answer {
  status: number;
  body: J;
  headers: Headers;
  text: string;
}

/** What a case gets: the shared server and its peers, and request helpers. */
export interface Env {
  srv: TestServer;
  smtp: TestSmtp;
  sms?: SmsFake;
  clock: TestClock;
  /** What GroupOptions.peers started. */
  peer: J;
  /** A fresh address for this case. */
  email(tag?: string): string;
  /** A fresh E.164 number ("+1555…") for this case. */
  phone(): string;
  /** A request; `body` is sent as JSON; `token` as a Bearer header; redirects are not followed. */
  call(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
    headers?: Record<string, string>,
  ): Promise<Answer>;
  /** A request with a service_role token. */
  admin(method: string, path: string, body?: unknown): Promise<Answer>;
  /** Creates a user through the admin API (confirmed unless told otherwise) and returns it. */
  user(fields?: Record<string, unknown>): Promise<J>;
  /** The password grant; throws unless it succeeds. */
  signIn(login: { email?: string; phone?: string }, password?: string): Promise<J>;
  /** A confirmed e-mail user with PASSWORD and a session. */
  session(email?: string): Promise<J>;
}

/** The password every helper-made user has. */
export const PASSWORD = "test-password-1";

/** One ported case. */
export interface Case {
  name: string;
  /** Set when we deliberately answer differently: why. The case asserts our answer. */
  difference?: string;
  run(e: Env): Promise<void>;
}

/** A case we answer as GoTrue does. */
export function ported(name: string, run: (e: Env) => Promise<void>): Case {
  return { name, run };
}

/** A case we deliberately answer differently; `reason` says why, `run` asserts our answer. */
export function differs(name: string, reason: string, run: (e: Env) => Promise<void>): Case {
  return { name, difference: reason, run };
}

/** A case as compat_test.ts collects it. */
export interface CollectedCase {
  file: string;
  name: string;
  difference?: string;
}

/** Options of a group. */
export interface GroupOptions {
  /** Start an SMS gateway fake (twilio) and turn phone sign-ups on. */
  sms?: boolean;
  server?: TestServerOptions;
  /** Peers started before the server (e.g. provider fakes): their settings, `e.peer`, and how to stop them. */
  peers?: () => Promise<{ env: Record<string, string>; peer: J; close(): Promise<void> }>;
}

let seq = 0;

async function request(
  srv: TestServer,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const raw = typeof body === "string" ? body : undefined;
  const r = await call(srv, method, path, {
    body: raw === undefined ? body : undefined,
    raw,
    token,
    headers,
  });
  return { status: r.status, body: r.body, headers: r.headers, text: r.text };
}

/** Builds the helpers of one group. */
function envFor(
  srv: TestServer,
  smtp: TestSmtp,
  clock: TestClock,
  sms: SmsFake | undefined,
  peer: J,
): Env {
  const e: Env = {
    srv,
    smtp,
    sms,
    clock,
    peer,
    email: (tag = "c") => `${tag}-${++seq}-${crypto.randomUUID().slice(0, 6)}@example.com`,
    phone: () => `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`,
    call: (method, path, body, token, headers) => request(srv, method, path, body, token, headers),
    admin: async (method, path, body) =>
      request(srv, method, path, body, await srv.serviceRoleToken()),
    async user(fields = {}) {
      const body: Record<string, unknown> = { password: PASSWORD, ...fields };
      if (body.email && body.email_confirm === undefined) body.email_confirm = true;
      if (body.phone && body.phone_confirm === undefined) body.phone_confirm = true;
      if (!body.email && !body.phone) {
        body.email = e.email();
        body.email_confirm = true;
      }
      const r = await e.admin("POST", "/admin/users", body);
      assert.equal(r.status, 200, `admin create: ${r.text}`);
      return r.body;
    },
    async signIn(login, password = PASSWORD) {
      const r = await e.call("POST", "/token?grant_type=password", { ...login, password });
      assert.equal(r.status, 200, `sign-in: ${r.text}`);
      return r.body;
    },
    async session(address = e.email()) {
      await e.user({ email: address });
      return await e.signIn({ email: address });
    },
  };
  return e;
}

/**
 * Registers a group of ported cases sharing one server (with `env` on top of
 * the test defaults and an SMTP server), one test step per case.
 */
export function conformance(
  file: string,
  env: Record<string, string>,
  cases: Case[],
  opts: GroupOptions = {},
): void {
  const sink = (globalThis as { __conformanceCases?: CollectedCase[] }).__conformanceCases;
  if (sink) {
    // compat_test.ts counts the cases for docs/compat.md without running them
    for (const c of cases) sink.push({ file, name: c.name, difference: c.difference });
    return;
  }
  const label = Object.keys(env).length
    ? ` [${Object.entries(env).map(([k, v]) => `${k.replace(/^AUTHSVC_/, "")}=${v}`).join(" ")}]`
    : "";
  Deno.test(`conformance: ${file}${label}`, async (t) => {
    const smtp = await startSmtp();
    const sms = opts.sms ? await startSmsFake("twilio") : undefined;
    const clock = new TestClock();
    let srv: TestServer | undefined;
    const peers = opts.peers ? await opts.peers() : undefined;
    try {
      srv = await startTestServer(
        {
          ...smtp.env,
          AUTHSVC_SMTP_MAX_FREQUENCY: "0s",
          AUTHSVC_SMTP_LINK_FREQUENCY: "0s",
          AUTHSVC_SMS_MAX_FREQUENCY: "0s",
          AUTHSVC_RATE_LIMIT_EMAIL_SENT: "100000",
          AUTHSVC_RATE_LIMIT_SMS_SENT: "100000",
          AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "100000",
          AUTHSVC_RATE_LIMIT_VERIFY: "100000",
          AUTHSVC_RATE_LIMIT_OTP: "100000",
          AUTHSVC_RATE_LIMIT_SIGNUP: "100000",
          AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: "100000",
          ...(sms ? { ...sms.env, AUTHSVC_EXTERNAL_PHONE_ENABLED: "true" } : {}),
          ...peers?.env,
          ...env,
        },
        { clock, ...opts.server },
      );
      const e = envFor(srv, smtp, clock, sms, peers?.peer);
      for (const c of cases) {
        const name = c.difference
          ? `${file} ${c.name} (documented difference: ${c.difference})`
          : `${file} ${c.name}`;
        await t.step(name, () => c.run(e));
      }
    } finally {
      await srv?.close();
      await peers?.close();
      await sms?.close();
      await smtp.close();
    }
  });
}

/** The query (or fragment) parameters of a redirect's Location. */
export function locationParams(
  a: Answer,
): { url: URL; query: URLSearchParams; hash: URLSearchParams } {
  const loc = a.headers.get("location");
  assert.ok(loc, `no Location (status ${a.status}): ${a.text}`);
  const url = new URL(loc, "http://localhost");
  return { url, query: url.searchParams, hash: new URLSearchParams(url.hash.slice(1)) };
}

/** The path and query of a link a mail carries, to call on the test server. */
export function pathOf(link: string): string {
  const u = new URL(link);
  return u.pathname + u.search;
}

/** The claims of a JWT (unverified). */
export function claims(jwt: string): J {
  const p = jwt.split(".")[1];
  return JSON.parse(atob(p.replace(/-/g, "+").replace(/_/g, "/")));
}

/** Asserts an error answer: status, and `error_code` when given. */
export function assertError(a: Answer, status: number, code?: string): void {
  assert.equal(a.status, status, `expected ${status} ${code ?? ""}, got ${a.status}: ${a.text}`);
  if (code) assert.equal(a.body.error_code, code, a.text);
}

/** PKCE: a verifier and its S256 challenge. */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const verifier = b64url(bytes) + "abcdefghij";
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)),
  );
  return { verifier, challenge: b64url(digest) };
}

function b64url(b: Uint8Array): string {
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Enrolls a TOTP factor for the session and verifies it: the factor id, its secret and the AAL2 session. */
export async function totpFactor(e: Env, session: J, friendlyName?: string) {
  const enroll = await e.call("POST", "/factors", {
    factor_type: "totp",
    ...(friendlyName ? { friendly_name: friendlyName } : {}),
  }, session.access_token);
  assert.equal(enroll.status, 200, enroll.text);
  const id = enroll.body.id as string;
  const secret = enroll.body.totp.secret as string;
  const aal2 = await verifyTotp(e, session.access_token, id, secret);
  return { id, secret, aal2 };
}

/** Challenges and verifies a TOTP factor at the server's clock: the AAL2 token set. */
export async function verifyTotp(e: Env, token: string, id: string, secret: string): Promise<J> {
  const ch = await e.call("POST", `/factors/${id}/challenge`, {}, token);
  assert.equal(ch.status, 200, ch.text);
  const v = await e.call("POST", `/factors/${id}/verify`, {
    challenge_id: ch.body.id,
    code: totpAt(secret, e.clock.now().getTime()),
  }, token);
  assert.equal(v.status, 200, v.text);
  return v.body;
}
