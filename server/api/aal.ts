/**
 * Authenticator assurance: once a user has a verified MFA factor, changes
 * that would let whoever holds a password-only (aal1) session keep the
 * account need an aal2 session. GoTrue (internal/api/user.go) gates the
 * password, e-mail and phone of PUT /user with 401 insufficient_aal; this
 * server gates linking and unlinking identities the same way (GoTrue lets an
 * aal1 session add a provider login, which is a way in that skips the second
 * factor). Enrolling and unenrolling factors have their own checks in
 * factors.ts, with GoTrue's statuses.
 */
import { normalizePhone } from "../auth/users.ts";
import type { Services } from "../services.ts";
import type { Caller } from "./context.ts";
import { ApiError } from "./errors.ts";
import type { Body } from "./input.ts";

/** GoTrue's message for PUT /user. */
export const AAL2_UPDATE_MESSAGE =
  "AAL2 session is required to update email or password when MFA is enabled.";

/** The message for linking and unlinking identities. */
export const AAL2_IDENTITY_MESSAGE =
  "AAL2 session is required to link or unlink identities when MFA is enabled.";

/**
 * Throws 401 insufficient_aal unless the caller's session is aal2 or the
 * user has no verified factor. A token without a session counts as aal1.
 */
export async function requireAal2IfMfa(s: Services, caller: Caller, message: string) {
  if (caller.session?.aal === "aal2") return;
  if (!await s.mfa.hasVerifiedFactor(caller.user.id)) return;
  throw new ApiError(401, "insufficient_aal", message);
}

/** Whether a PUT /user body changes the password, the e-mail or the phone (as GoTrue tells). */
export function changesCredentials(caller: Caller, body: Body): boolean {
  const { user } = caller;
  const str = (k: string) => typeof body[k] === "string" ? (body[k] as string).trim() : "";
  const password = typeof body.password === "string" ? body.password : "";
  const email = str("email").toLowerCase();
  const phone = str("phone");
  return password !== "" ||
    (email !== "" && email !== (user.email ?? "").toLowerCase()) ||
    (phone !== "" && (normalizePhone(phone) ?? phone) !== (user.phone ?? ""));
}
