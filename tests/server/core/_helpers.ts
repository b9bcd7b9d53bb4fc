/** Small helpers shared by the core endpoint tests. */
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
