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

/**
 * The settings of provider `p` (google, apple, ...) for native sign-in with
 * ID tokens of a local issuer at `url` (tests/helpers/id_token_issuer.ts).
 */
export function idTokenProviderEnv(
  p: string,
  url: string,
  clientId = "web-client,ios-client",
): Record<string, string> {
  const X = `AUTHSVC_EXTERNAL_${p.toUpperCase()}`;
  return {
    [`${X}_ENABLED`]: "true",
    [`${X}_CLIENT_ID`]: clientId,
    [`${X}_SECRET`]: "unused-by-native-sign-in",
    [`${X}_REDIRECT_URI`]: "http://localhost:8081/callback",
    [`${X}_URL`]: url,
  };
}
