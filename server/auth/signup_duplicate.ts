/**
 * The answer to a sign-up of a known address, which must not tell itself
 * apart from a fresh sign-up (no account enumeration: docs/security.md). With
 * autoconfirm off it is a fabricated user with a random id, the same members
 * as a stored one, timestamps that move like a stored user's (created when
 * the lookup ended, updated when the confirmation went out), and it takes
 * about as long: the channel's hooks run for the real user (an unconfirmed
 * one gets its confirmation again) and, when they send nothing, the answer
 * waits as long as fresh sign-ups' insert and mail took lately. With
 * autoconfirm on GoTrue answers 422 user_already_exists; a phone, 400 (GoTrue's
 * signup.go).
 */
import type { SignupClaim } from "./confirm.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import type { UserRow } from "./users.ts";
import { userToJson } from "./users.ts";
import {
  SIGNUP_WORK,
  type SignupChannel,
  type SignupConfirmation,
  type SignupOutcome,
  type SignupRequest,
  signupTiming,
} from "./signup_request.ts";

/**
 * A user answer indistinguishable from a fresh sign-up, for a known address:
 * the same members and, like a stored user, created when the lookup ended
 * (`createdAt`) and updated (confirmation sent) later, once the hooks ran.
 */
function fabricatedUser(
  s: Domain,
  channel: SignupChannel,
  address: string,
  data: Record<string, unknown>,
  confirmationSent: boolean,
  createdAt: Date,
  confirmed: boolean,
  invited: boolean,
): Record<string, unknown> {
  const later = s.clock.now();
  const now = later.getTime() > createdAt.getTime() ? later : new Date(createdAt.getTime() + 1);
  const id = crypto.randomUUID();
  const row: UserRow = {
    id,
    aud: s.config.jwt.aud,
    role: s.config.jwt.defaultGroupName || "authenticated",
    email: channel === "email" ? address : null,
    encrypted_password: null,
    email_confirmed_at: null,
    invited_at: null,
    confirmation_sent_at: confirmationSent && channel === "email" ? now : null,
    recovery_sent_at: null,
    email_change: null,
    email_change_sent_at: null,
    email_change_confirm_status: 0,
    phone: channel === "phone" ? address : null,
    phone_confirmed_at: null,
    phone_change: null,
    phone_change_sent_at: null,
    reauthentication_sent_at: null,
    last_sign_in_at: null,
    raw_app_meta_data: { provider: channel, providers: [channel] },
    raw_user_meta_data: data,
    banned_until: null,
    deleted_at: null,
    is_anonymous: false,
    created_at: createdAt,
    updated_at: confirmationSent ? now : createdAt,
  };
  if (confirmationSent && channel === "phone") row.confirmation_sent_at = now;
  const identity = {
    id: crypto.randomUUID(),
    user_id: id,
    provider: channel,
    provider_id: id,
    identity_data: {
      sub: id,
      [channel]: address,
      email_verified: false,
      phone_verified: false,
    },
    email: channel === "email" ? address : null,
    last_sign_in_at: createdAt,
    created_at: createdAt,
    updated_at: createdAt,
  };
  // GoTrue's sanitizeUser answers a confirmed address with `identities: []`,
  // which supabase-js apps read as "already registered"; an unconfirmed one
  // gets its confirmation again and an answer with the identity.
  // An invited user's answer leaves out what the inviter set (GoTrue's
  // HasBeenInvited branch): no identities, no user_metadata.
  if (invited) row.raw_user_meta_data = {};
  return userToJson(row, { identities: confirmed || invited ? [] : [identity] });
}

/** How the sign-up that found the address known goes on. */
export interface DuplicateContext {
  autoconfirm: boolean;
  /** When the address lookup ended (the channel's answer timing's clock). */
  lookedUp: number;
  confirmations: readonly SignupConfirmation[];
  /** What confirming this sign-up would keep (its password's hash and data). */
  signup: SignupClaim;
}

/**
 * Answers a sign-up of an address that already has an account: called by
 * signUp (signup.ts) after the lookup found the user.
 */
export async function duplicateSignup(
  s: Domain,
  r: SignupRequest,
  existing: UserRow,
  meta: RequestMeta,
  x: DuplicateContext,
): Promise<SignupOutcome> {
  const { channel, address, data } = r;
  const hooks = x.confirmations;
  const createdAt = s.clock.now();
  await s.audit.record({
    action: "user_repeated_signup",
    actorId: existing.id,
    actorUsername: existing.email ?? existing.phone ?? "",
    logType: "user",
    traits: { provider: channel },
    ip: meta.ip,
  });
  if (x.autoconfirm) return { alreadyExists: channel };
  if (hooks.length) {
    // A fresh sign-up's confirmation is refused (429) once the channel's send cap
    // (RATE_LIMIT_EMAIL_SENT / RATE_LIMIT_SMS_SENT) is reached; refuse alike, or
    // an exhausted cap would tell known addresses from new ones.
    await s.sendLimits.check({
      channel: channel === "email" ? "email" : "sms",
      recipient: "",
      kind: "confirmation",
      intervalSec: 0,
    });
  }
  // A user that a parallel sign-up of this address has just created, and whose confirmation
  // that sign-up is about to send (none sent yet, created within the channel's send interval):
  // sending one from here too would take the recipient's send slot first, the creator's own
  // send would be refused (429) and the creator would undo the sign-up, leaving no user behind
  // the mail sent from here. The creator's mail is the confirmation; this answer is as usual.
  // (A user whose confirmation mail failed gets it again from a sign-up after the interval, or
  // from POST /resend.)
  const interval = channel === "email" ? s.config.smtp.maxFrequency : s.config.sms.maxFrequency;
  const unconfirmed = channel === "email"
    ? !existing.email_confirmed_at
    : !existing.phone_confirmed_at;
  const beingConfirmed = unconfirmed && !existing.invited_at && !existing.confirmation_sent_at &&
    createdAt.getTime() - new Date(existing.created_at).getTime() < interval * 1000;
  for (const hook of beingConfirmed ? [] : hooks) {
    try {
      await hook({
        d: s,
        user: existing,
        channel,
        request: r,
        meta,
        duplicate: true,
        signup: x.signup,
      });
    } catch (e) {
      // The answer must not differ from a fresh sign-up's: log, never surface.
      s.log.warn("sign-up hook failed for a known address", {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }
  // As long as a fresh sign-up's insert and confirmation lately took (mail/timing.ts).
  await signupTiming(s, channel).pad(SIGNUP_WORK, x.lookedUp);
  const confirmed = channel === "email"
    ? !!existing.email_confirmed_at
    : !!existing.phone_confirmed_at;
  return {
    user: fabricatedUser(
      s,
      channel,
      address,
      data,
      hooks.length > 0,
      createdAt,
      confirmed,
      !!existing.invited_at,
    ),
  };
}
