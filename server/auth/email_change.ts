/**
 * The two sides of a secure e-mail change (MAILER_SECURE_EMAIL_CHANGE_ENABLED):
 * the current address and the new one each confirm, and the change completes
 * once both have. Which side confirmed is recorded as a bit of the user's
 * `email_change_confirm_status`, set in one statement (`UPDATE ... SET status
 * = status | side`), so a second link of the same side (one a `/resend`
 * issued) never stands in for the other side, and two links opened at once
 * complete the change exactly once. Issuing new change links starts the
 * record again (auth/action_mail.ts `sendEmailChangeMails`), as GoTrue's
 * sendEmailChange resets its confirmation status.
 */

/** The current address confirmed. */
export const CURRENT_CONFIRMED = 1;
/** The new address confirmed. */
export const NEW_CONFIRMED = 2;
/** Both confirmed: the change completes. */
export const BOTH_CONFIRMED = CURRENT_CONFIRMED | NEW_CONFIRMED;

/** The side an e-mail change token belongs to (`email_change_current` or `email_change_new`). */
export function sideOf(tokenType: string): number {
  return tokenType === "email_change_current" ? CURRENT_CONFIRMED : NEW_CONFIRMED;
}

/**
 * The record a link an admin generated starts from: the other side counts as
 * confirmed, since the admin vouches for the change and one verified link
 * completes it.
 */
export function vouchedByAdmin(tokenType: string): number {
  return BOTH_CONFIRMED & ~sideOf(tokenType);
}
