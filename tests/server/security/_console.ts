/**
 * The operators' console as the security tests drive it: an operator account made through the
 * admin API, and a browser-like client keeping the console's cookies that signs in as the page
 * does (GET /console/ for the CSRF cookie, then POST /console/api/login).
 */
import assert from "node:assert/strict";
import type { TestServer } from "../../helpers/server.ts";

/** Creates a confirmed account with a password and an admin role; returns its id. */
export async function createOperator(
  srv: TestServer,
  email: string,
  password: string,
  role = "supabase_admin",
): Promise<string> {
  const res = await srv.fetch("/admin/users", {
    method: "POST",
    headers: {
      authorization: `Bearer ${await srv.serviceRoleToken()}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ email, password, email_confirm: true, role }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.id;
}

/** A browser holding the console's cookies. */
export class ConsoleBrowser {
  readonly cookies = new Map<string, string>();
  constructor(readonly srv: TestServer) {}

  /** The Cookie header this browser sends to the console. */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  /** The value of the CSRF cookie (what the page's script reads and sends). */
  csrf(): string {
    return this.cookies.get("authsvc_console_csrf") ?? "";
  }

  /** A request with this browser's cookies; the page's X-CSRF-Token unless `csrf` is false. */
  async fetch(path: string, init: RequestInit & { csrf?: boolean } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set("cookie", this.cookieHeader());
    if (init.csrf !== false) headers.set("x-csrf-token", this.csrf());
    const res = await this.srv.fetch(path, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      const value = pair.slice(i + 1);
      if (/max-age=0/i.test(c) || value === "") this.cookies.delete(pair.slice(0, i));
      else this.cookies.set(pair.slice(0, i), value);
    }
    return res;
  }

  /** Opens the page and signs in with a password (no MFA). */
  async signIn(email: string, password: string, headers: HeadersInit = {}): Promise<void> {
    await (await this.fetch("/console/", { csrf: false })).body?.cancel();
    const res = await this.fetch("/console/api/login", {
      method: "POST",
      headers: { "content-type": "application/json", ...Object.fromEntries(new Headers(headers)) },
      body: JSON.stringify({ email, password }),
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.mfa_required, false);
  }
}
