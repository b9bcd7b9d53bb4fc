/** Small helpers shared by the core endpoint tests. */
import assert from "node:assert/strict";
import { postJson, type TestServer } from "../../helpers/server.ts";
import { type Json, uniqueEmail } from "../../helpers/http.ts";

/** Signs up with autoconfirm on (the server must have it) and returns the session. */
export async function signUpSession(
  srv: TestServer,
  address = uniqueEmail("u"),
  password = "secret-pw-1",
) {
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

/**
 * A cost-13 bcrypt hash of "blocker": one verification keeps a hasher worker busy for hundreds
 * of milliseconds of CPU, so the jobs queued behind it are still waiting while a test does its
 * next steps.
 */
export const BLOCKER_HASH = "$2a$13$2o3CfQfzpphnIJUxIsJzmueoE6ampw7xGnq94AH11U7icbTa79J5m";

/** Resolves once `ready()` holds, looking again every few milliseconds (no deadline). */
export async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise((r) => setTimeout(r, 5));
}

/**
 * POSTs JSON `body` to `path` while every hasher worker is busy with long verifications and two
 * more wait in the queue, and closes the connection once the request's own hash waits behind
 * them. Asserts what the client and the server show: the fetch ends aborted, the server drops the
 * job as soon as it sees the connection close (the queue shrinks while the blockers still run),
 * the blockers get their answers, and the access log line of `route` (the server needs
 * LOG_LEVEL=info) carries nginx's 499 "client closed request".
 */
export async function abandonWhileHashWaits(
  srv: TestServer,
  path: string,
  route: string,
  body: Json,
): Promise<void> {
  const hasher = srv.services.passwords;
  const blockers = Array.from(
    { length: hasher.size * 2 + 2 },
    () => hasher.verify("blocker", BLOCKER_HASH),
  );
  const client = new AbortController();
  const answer = srv.fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: client.signal,
  }).then(() => "answered", () => "aborted");
  await until(() => hasher.waiting === 3);
  client.abort(); // the client closes the connection
  assert.equal(await answer, "aborted");
  await until(() => hasher.waiting === 2);
  assert.deepEqual(await Promise.all(blockers), blockers.map(() => true));
  const lines = () =>
    srv.logs.map((l) => JSON.parse(l)).filter((l) =>
      l.msg === "request" && l.route === route && l.method === "POST"
    );
  await until(() => lines().length === 1);
  assert.equal(lines()[0].status, 499);
}

/** A clock a test can move forward. */
export function movableClock() {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (sec: number) => offset += sec * 1000,
  };
}
