/** Helpers of the console's tests: users made through the admin API, a cookie-keeping client. */
import assert from "node:assert/strict";
import type { TestServer } from "../../helpers/server.ts";

export function uniqueEmail(tag: string): string {
  return `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;
}

/** Creates a confirmed user with a password (and a role) through the admin API. */
export async function createUser(srv: TestServer, email: string, password: string, role?: string) {
  const res = await srv.fetch("/admin/users", {
    method: "POST",
    headers: {
      authorization: `Bearer ${await srv.serviceRoleToken()}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ email, password, email_confirm: true, ...(role ? { role } : {}) }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json() as { id: string };
}

/** A cookie jar for one browser-like client of the console. */
export class Client {
  cookies = new Map<string, string>();
  constructor(readonly srv: TestServer) {}

  async fetch(path: string, init: RequestInit & { csrf?: boolean } = {}) {
    const headers = new Headers(init.headers);
    headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    if (init.csrf !== false) {
      headers.set("x-csrf-token", this.cookies.get("authsvc_console_csrf") ?? "");
    }
    const res = await this.srv.fetch(path, { ...init, headers });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      const value = pair.slice(i + 1);
      if (/max-age=0/i.test(c) || value === "") this.cookies.delete(pair.slice(0, i));
      else this.cookies.set(pair.slice(0, i), value);
    }
    return res;
  }

  async json(path: string, method = "GET", body?: unknown) {
    const res = await this.fetch(path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json(), headers: res.headers };
  }
}

/** Opens the console page (for its CSRF cookie) and signs in; the login call's answer. */
export async function consoleSignIn(client: Client, email: string, password: string) {
  await (await client.fetch("/console/")).body?.cancel();
  return await client.json("/console/api/login", "POST", { email, password });
}
