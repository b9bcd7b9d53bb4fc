/**
 * Authenticator assurance and the gates of identity linking, decided once
 * for every route that needs them.
 *
 * Once a user has a verified MFA factor, changes that would let whoever
 * holds a password-only (aal1) session keep the account need an aal2
 * session. GoTrue (internal/api/user.go) gates the password, e-mail and
 * phone of PUT /user with 401 insufficient_aal; this server gates linking
 * and unlinking identities the same way, by either road (GET
 * /user/identities/authorize, DELETE /user/identities/<id>, and
 * `POST /token?grant_type=id_token` with `link_identity`): GoTrue lets an
 * aal1 session add a provider login, which is a way in that skips the
 * second factor. Enrolling and unenrolling factors have their own checks
 * (auth/mfa.ts, api/factors.ts), with GoTrue's statuses.
 */
import type { Config } from "../config/mod.ts";
import { AuthError } from "./errors.ts";
import type { Mfa } from "./mfa.ts";
import type { SessionRow } from "./sessions.ts";
import type { UserRow } from "./users.ts";

/** GoTrue's message for PUT /user. */
export const AAL2_UPDATE_MESSAGE =
  "AAL2 session is required to update email or password when MFA is enabled.";

/** The message for linking and unlinking identities. */
export const AAL2_IDENTITY_MESSAGE =
  "AAL2 session is required to link or unlink identities when MFA is enabled.";

/** A signed-in caller, as the assurance rules read it. */
export interface AssuredCaller {
  user: Pick<UserRow, "id">;
  /** Null for a token without a session, which counts as aal1. */
  session: Pick<SessionRow, "aal"> | null;
}

/**
 * Throws 401 insufficient_aal with `message` unless the caller's session is
 * aal2 or the user has no verified factor.
 */
export async function requireAal2IfMfa(
  mfa: Pick<Mfa, "hasVerifiedFactor">,
  caller: AssuredCaller,
  message: string,
): Promise<void> {
  if (caller.session?.aal === "aal2") return;
  if (!await mfa.hasVerifiedFactor(caller.user.id)) return;
  throw new AuthError("insufficient_aal", message, { situation: "aal_gate" });
}

/** SECURITY_MANUAL_LINKING_ENABLED, else 404 manual_linking_disabled (GoTrue's requireManualLinkingEnabled). */
export function requireManualLinking(config: Config): void {
  if (!config.security.manualLinkingEnabled) {
    throw new AuthError("manual_linking_disabled", "Manual linking is disabled");
  }
}

/**
 * The two gates of linking or unlinking an identity, in GoTrue's order
 * (after the caller is authenticated): manual linking enabled, then an aal2
 * session once the user has a verified factor.
 */
export async function requireLinkingAllowed(
  s: { config: Config; mfa: Pick<Mfa, "hasVerifiedFactor"> },
  caller: AssuredCaller,
): Promise<void> {
  requireManualLinking(s.config);
  await requireAal2IfMfa(s.mfa, caller, AAL2_IDENTITY_MESSAGE);
}
