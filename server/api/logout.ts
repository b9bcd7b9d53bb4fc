/**
 * POST /logout?scope=global|local|others (default global): ends sessions, so
 * their refresh tokens stop working. Issued access tokens stay valid JWTs
 * until they expire, but protected calls with them answer session_not_found.
 */
import type { Services } from "../services.ts";
import { signOut } from "../auth/sign_in.ts";
import { callerOf, type Ctx } from "./context.ts";
import { requestMeta } from "./meta.ts";
import { badRequest } from "./errors.ts";

const SCOPES = ["global", "local", "others"] as const;
type Scope = typeof SCOPES[number];

/** POST /logout. */
export async function logout(c: Ctx, s: Services): Promise<Response> {
  const scope = (c.req.query("scope") ?? "global") as Scope;
  if (!SCOPES.includes(scope)) {
    throw badRequest(
      `Unsupported logout scope "${scope.slice(0, 32)}": scope must be one of ${SCOPES.join(", ")}`,
    );
  }
  const { user, session } = callerOf(c);
  await signOut(s, user, session?.id, scope, requestMeta(c));
  return c.body(null, 204);
}
