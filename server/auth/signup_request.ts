/** What a sign-up is made of: its request, its outcome, its confirmations (signup.ts). */
import type { SignupClaim } from "./confirm.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import type { PkceParams } from "./pkce.ts";
import type { TokenSet } from "./sessions.ts";
import type { UserRow } from "./users.ts";
import type { AnswerTiming } from "../mail/timing.ts";

/** The channel a sign-up came through. */
export type SignupChannel = "email" | "phone";

/** A sign-up with an address, as the handler parsed it. */
export interface SignupRequest {
  channel: SignupChannel;
  /** The address in its canonical form (e-mail checked, phone E.164 digits). */
  address: string;
  password: string;
  data: Record<string, unknown>;
  /** `redirect_to` of the request (query first, then body), unchecked. */
  redirectTo?: string;
  /** `code_challenge` and its method: the confirming link continues a PKCE flow. */
  pkce?: PkceParams;
}

/** What a sign-up ends with. */
export type SignupOutcome =
  | { set: TokenSet }
  | { user: Record<string, unknown> }
  /** A known address with autoconfirm on: GoTrue's user_already_exists (422, by phone 400). */
  | { alreadyExists: SignupChannel };

/** What a sign-up confirmation gets. */
export interface SignupEvent {
  d: Domain;
  /** The user (fresh, or the existing one when `duplicate`). */
  user: UserRow;
  channel: SignupChannel;
  request: SignupRequest;
  meta: RequestMeta;
  /**
   * True when the address already had an account: the answer is fabricated
   * whatever the confirmation does; it may resend the confirmation of a user
   * who is not confirmed yet, and must not reveal anything.
   */
  duplicate: boolean;
  /**
   * What confirming this sign-up keeps (auth/confirm.ts): put it in the
   * confirmation's token. A fresh sign-up's is `{}` (the row is its own); a
   * repeated one carries its password's hash and data, so the owner's own
   * sign-up is the one that counts once they confirm it.
   */
  signup: SignupClaim;
}

/**
 * A sign-up confirmation, run after the user is stored when autoconfirm is
 * off for its channel. It may return the updated row (confirmation_sent_at),
 * which the answer then shows.
 */
export type SignupConfirmation = (ev: SignupEvent) => Promise<UserRow | void>;

/** The answer timing of a channel's sign-ups (mail/timing.ts: one scheme for every answer). */
export function signupTiming(d: Domain, channel: SignupChannel): AnswerTiming {
  return channel === "email" ? d.mailer.timing : d.sms.timing;
}

/** The timing key of a sign-up's work after the address lookup (the insert, the confirmation). */
export const SIGNUP_WORK = "signup";
