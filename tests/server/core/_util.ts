/** Small helpers shared by the core endpoint tests. */
import { postJson, type TestServer } from "../../helpers/server.ts";

export type Json = Record<string, unknown>;

/** A unique e-mail address for one test. */
export function email(tag = "u"): string {
  return `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;
}

/** Sends a request with a JSON body (or none) and returns status, body and headers. */
export async function call(
  srv: TestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json; headers: Headers }> {
  const res = await srv.fetch(path, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers };
}

/** Bearer header. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Signs up with autoconfirm on (the server must have it) and returns the session. */
export async function signUpSession(srv: TestServer, address = email(), password = "secret-pw-1") {
  const r = await postJson(srv, "/signup", { email: address, password });
  if (r.status !== 200 || typeof r.body.access_token !== "string") {
    throw new Error(`sign-up failed: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return r.body as Json & { access_token: string; refresh_token: string; user: Json };
}

/** The password grant. */
export function passwordGrant(srv: TestServer, body: Json) {
  return postJson(srv, "/token?grant_type=password", body);
}

/** The refresh_token grant. */
export function refreshGrant(srv: TestServer, refresh_token: string) {
  return postJson(srv, "/token?grant_type=refresh_token", { refresh_token });
}
