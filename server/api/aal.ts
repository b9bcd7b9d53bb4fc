/**
 * Which PUT /user bodies need an aal2 session once the user has a verified
 * MFA factor (the rule itself: auth/assurance.ts).
 */
import { normalizePhone } from "../auth/users.ts";
import type { Caller } from "./context.ts";
import type { Body } from "./input.ts";

export { AAL2_IDENTITY_MESSAGE, AAL2_UPDATE_MESSAGE } from "../auth/assurance.ts";

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
