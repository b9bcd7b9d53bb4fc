/** Shared helpers of the drop-in tests (issue 23), on the shared test helpers. */
import { bearer, call as httpCall, type Json, uniqueEmail } from "../../helpers/http.ts";
import type { TestServer } from "../../helpers/server.ts";

export { passwordGrant, refreshGrant, signUpSession } from "../core/_helpers.ts";
export { bearer, type Json };

/** A unique e-mail address for one test. */
export const email = uniqueEmail;

/** Sends a request with a JSON body (or none) and extra headers; returns status and body. */
export async function call(
  srv: TestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json; headers: Headers }> {
  const r = await httpCall(srv, method, path, { body, headers });
  return { status: r.status, body: r.body, headers: r.headers };
}
