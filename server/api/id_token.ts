/**
 * POST /token?grant_type=id_token (auth-js `signInWithIdToken`): a native
 * app's ID token from Apple, Google, Azure, Facebook or Keycloak signs the
 * user in, creates them, or (with `link_identity` and the user's bearer
 * token, checked here since only a link needs one) links the identity to
 * them, behind the gates of GET /user/identities/authorize
 * (SECURITY_MANUAL_LINKING_ENABLED, aal2 once the user has a verified
 * factor: auth/assurance.ts). Listed in `GRANTS` (token.ts). Verification and mapping live in
 * providers/id_token_grant.ts; the account decision is the redirect flow's.
 */
import { requireLinkingAllowed } from "../auth/assurance.ts";
import { signInWithIdToken } from "../auth/sign_in.ts";
import { verifyGrantIdToken } from "../providers/id_token_grant.ts";
import type { Services } from "../services.ts";
import { type Ctx, requireUser } from "./context.ts";
import { requestMeta } from "./meta.ts";
import { badRequest } from "./errors.ts";
import { tokenSetResponse } from "./headers.ts";
import { type Body, optString } from "./input.ts";

/** The id_token grant. */
export async function idTokenGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  const idToken = optString(body, "id_token", 16_384);
  if (!idToken) throw badRequest("id_token is required");
  const provider = optString(body, "provider", 64);
  const issuer = optString(body, "issuer", 512);
  if (!provider && !issuer) throw badRequest("provider (or issuer) is required");
  const link = body.link_identity === true;
  // The caller first: a link needs a valid session, and the gates of every road to a link
  // (manual linking enabled, aal2 for a user with MFA), before any provider work.
  const caller = link ? await requireUser(c) : null;
  if (caller) await requireLinkingAllowed(s, caller);
  const verified = await verifyGrantIdToken(s.config, {
    idToken,
    provider,
    issuer,
    nonce: optString(body, "nonce", 512),
    accessToken: optString(body, "access_token", 16_384),
  }, s.clock.now());
  return tokenSetResponse(
    c,
    await signInWithIdToken(s, verified, caller?.user.id ?? null, requestMeta(c)),
  );
}
