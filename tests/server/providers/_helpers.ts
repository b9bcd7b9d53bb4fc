/** Helpers of the external-provider tests: a server wired to provider fakes, and the browser's part. */
import {
  type FakeUser,
  type ProviderFake,
  startProviderFake,
} from "../../helpers/provider_fakes.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";

/** The redirect URI every fake sends the browser back to (rewritten to the test server). */
export const REDIRECT_URI = "http://localhost:8081/callback";
/** The site the server redirects to afterwards. */
export const SITE = "http://localhost:3000";

export type Json = Record<string, unknown>;

/**
 * A server with the given fakes enabled, and manual linking on (GoTrue's default is off; these
 * tests link and unlink identities, as GoTrue's identity tests turn it on).
 */
export async function serverWithFakes(
  names: string[],
  env: Record<string, string> = {},
): Promise<{ srv: TestServer; fakes: Record<string, ProviderFake>; close(): Promise<void> }> {
  const fakes: Record<string, ProviderFake> = {};
  for (const n of names) fakes[n] = await startProviderFake(n, { user: defaultUser() });
  const all: Record<string, string> = {};
  for (const f of Object.values(fakes)) Object.assign(all, f.env(REDIRECT_URI));
  const srv = await startTestServer({
    ...all,
    AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
    ...env,
  });
  return {
    srv,
    fakes,
    async close() {
      await srv.close();
      for (const f of Object.values(fakes)) await f.close();
    },
  };
}

let counter = 1000;

/** A fresh person with a verified address. */
export function defaultUser(over: Partial<FakeUser> = {}): FakeUser {
  const id = String(++counter + Math.floor(Math.random() * 1e6) * 1000);
  return {
    id,
    email: `p${id}@example.org`,
    emailVerified: true,
    name: "Ada Lovelace",
    avatar: `https://img.example/${id}.png`,
    ...over,
  };
}

/** The server's answer after the browser came back from the provider. */
export interface Landing {
  status: number;
  location: URL;
  /** Fragment parameters (session, or error). */
  hash: URLSearchParams;
  query: URLSearchParams;
}

/**
 * The test browser's cookies, one jar per server: /authorize binds the state
 * to the browser with a cookie (server/api/oauth_binding.ts), and the
 * callback of that browser carries it back.
 */
const jars = new WeakMap<TestServer, Map<string, string>>();

function jar(srv: TestServer): Map<string, string> {
  let j = jars.get(srv);
  if (!j) jars.set(srv, j = new Map());
  return j;
}

/** Keeps the cookies a server response sets, as a browser would. */
export function keepCookies(srv: TestServer, res: Response): void {
  for (const line of res.headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(";");
    const i = pair.indexOf("=");
    const name = pair.slice(0, i).trim();
    if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) jar(srv).delete(name);
    else jar(srv).set(name, pair.slice(i + 1).trim());
  }
}

/** `init` with the browser's cookies for `srv` (unless it names its own). */
export function withCookies(srv: TestServer, init: RequestInit = {}): RequestInit {
  const headers = new Headers(init.headers);
  const cookies = [...jar(srv)].map(([k, v]) => `${k}=${v}`).join("; ");
  if (cookies && !headers.has("cookie")) headers.set("cookie", cookies);
  return { ...init, headers };
}

/** Forgets the browser's cookies for `srv` (another browser from now on). */
export function clearCookies(srv: TestServer): void {
  jar(srv).clear();
}

/** GETs a server path (as the test browser) without following redirects; returns the Location. */
export async function redirectOf(
  srv: TestServer,
  path: string,
  init: RequestInit = {},
): Promise<URL> {
  const res = await srv.fetch(path, withCookies(srv, { redirect: "manual", ...init }));
  keepCookies(srv, res);
  const body = await res.text();
  const loc = res.headers.get("location");
  if (!loc) throw new Error(`${path}: no redirect (${res.status} ${body})`);
  return new URL(loc);
}

/**
 * Opens the link URL auth-js navigates to (a single-use ticket on the server,
 * at API_EXTERNAL_URL) in the test browser: the provider URL it redirects to.
 */
export async function followLink(srv: TestServer, url: string): Promise<string> {
  const u = new URL(url);
  return (await redirectOf(srv, `${u.pathname}${u.search}`)).href;
}

/** Sends the browser's callback request (with its cookies) to the test server. */
export async function land(
  srv: TestServer,
  cb: { url: string; init: RequestInit },
): Promise<Landing> {
  const u = new URL(cb.url);
  const res = await srv.fetch(
    `${u.pathname}${u.search}`,
    withCookies(srv, { ...cb.init, redirect: "manual" }),
  );
  keepCookies(srv, res);
  await res.body?.cancel();
  const location = new URL(res.headers.get("location") ?? "about:blank");
  return {
    status: res.status,
    location,
    hash: new URLSearchParams(location.hash.slice(1)),
    query: location.searchParams,
  };
}

/** The whole browser round trip: /authorize, consent at the fake, /callback. */
export async function signIn(
  srv: TestServer,
  fake: ProviderFake,
  opts: {
    query?: Record<string, string>;
    postUser?: unknown;
    path?: string;
    headers?: HeadersInit;
  } = {},
): Promise<Landing> {
  const q = new URLSearchParams({ provider: fake.name, ...opts.query });
  if (fake.name === "workos" && !q.has("connection")) q.set("connection", "conn_123");
  const to = await redirectOf(srv, `${opts.path ?? "/authorize"}?${q}`, { headers: opts.headers });
  const cb = await fake.approve(to.href, { postUser: opts.postUser });
  return await land(srv, cb);
}

/** GET /user with a token. */
export async function getUser(
  srv: TestServer,
  token: string,
): Promise<{ status: number; body: Json }> {
  const res = await srv.fetch("/user", { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}
