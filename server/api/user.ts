/**
 * GET /user and PUT /user.
 *
 * PUT /user runs the steps of `USER_UPDATE_STEPS` over one `UserUpdate`:
 * every step reads the request and adds columns to `u.fields` (or work to
 * `u.after`); after all steps ran, the columns are written in ONE update and
 * the `after` callbacks run in order. The phone change lives in phone.ts, the
 * reauthentication nonce, the e-mail change and the password notice in
 * email_hooks.ts; `data` (merged into user_metadata; a null value deletes the
 * key, as GoTrue does) and `password` (strength check, same_password,
 * hashing; other sessions end) here. GET /user is user_profile.ts.
 */
import { checkPassword } from "../auth/pwned.ts";
import type { UserFields, UserRow } from "../auth/users.ts";
import { userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { type Caller, callerOf, clientIp, type Ctx } from "./context.ts";
import { ApiError, uniqueViolationAnswer, unprocessable } from "./errors.ts";
import { type Body, checkObjectBounds, optObject, optString, readBody } from "./input.ts";
import { emailChangeStep, nonceStep, passwordNoticeStep } from "./email_hooks.ts";
import { phoneUpdateStep } from "./phone.ts";

/** One PUT /user request in progress. */
export interface UserUpdate {
  c: Ctx;
  s: Services;
  caller: Caller;
  body: Body;
  /** The user as loaded before any step. */
  user: UserRow;
  /** Columns written in one update after all steps. */
  fields: UserFields;
  /** `password` of the body when present (not yet checked). */
  password?: string;
  /** True once the built-in password step accepted a new password. */
  passwordChanged: boolean;
  /** True once `current_password` was checked (see checkCurrentPassword). */
  currentPasswordChecked?: boolean;
  /**
   * Work with effects outside the row (a code sent, a nonce used up): run in
   * order once EVERY step has checked the request, before the row is written,
   * so a request one step refuses sends nothing and uses up nothing. A step
   * only reads and checks; what it would do goes here or into `after`.
   */
  effects: (() => Promise<void>)[];
  /** Run after the row is written, in order, with the written row (mails, audit). */
  after: ((user: UserRow) => Promise<void>)[];
}

/**
 * A step of PUT /user; throw an ApiError to refuse the whole update. A step
 * checks and sets `u.fields`; anything that leaves a trace elsewhere goes
 * into `u.effects` or `u.after`.
 */
export type UserUpdateStep = (u: UserUpdate) => Promise<void>;

/** The user as GET /user, PUT /user and the admin API answer it. */
export async function userResponse(s: Services, user: UserRow): Promise<Record<string, unknown>> {
  return userToJson(user, {
    identities: await s.users.listIdentities(user.id),
    factors: await s.mfa.factorsJson(user.id),
  });
}

/** Merges `data` into user_metadata; null values delete keys. */
export function mergeMetadata(
  current: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    // A data property even for "__proto__" (a plain assignment would set the prototype).
    else {Object.defineProperty(out, k, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });}
  }
  return out;
}

function dataStep(u: UserUpdate): Promise<void> {
  const data = optObject(u.body, "data");
  if (data) {
    u.fields.raw_user_meta_data = mergeMetadata(u.user.raw_user_meta_data ?? {}, data);
    checkObjectBounds("data", u.fields.raw_user_meta_data);
  }
  return Promise.resolve();
}

/** Sign-in methods of a session that proved the mailbox or phone: a password reset needs no old password. */
const RECOVERY_METHODS = new Set(["otp", "magiclink", "recovery"]);

/**
 * SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD: a new password for a user
 * who has one needs `current_password`, except in a session that came from a
 * recovery, magic link or OTP (the user who forgot it), as GoTrue's UserUpdate.
 * Answers 400 current_password_required or current_password_invalid.
 */
export async function checkCurrentPassword(u: UserUpdate): Promise<void> {
  const { s, user } = u;
  if (u.currentPasswordChecked || !u.password || !user.encrypted_password) return;
  if (!s.config.security.updatePasswordRequireCurrentPassword) return;
  if (u.caller.session?.amr.some((e) => RECOVERY_METHODS.has(e.method))) return;
  const current = optString(u.body, "current_password", 1024);
  if (!current) {
    throw new ApiError(
      400,
      "current_password_required",
      "Current password required when setting new password.",
    );
  }
  if (!await s.passwords.verify(current, user.encrypted_password)) {
    throw new ApiError(
      400,
      "current_password_invalid",
      "Current password required when setting new password.",
    );
  }
  u.currentPasswordChecked = true;
}

async function passwordStep(u: UserUpdate): Promise<void> {
  const { s, user } = u;
  if (u.password === undefined) return;
  if (u.password === "") throw unprocessable("password must not be empty");
  // GoTrue checks the request: an anonymous user may set a password with a new address.
  if (user.is_anonymous && !optString(u.body, "email", 320) && !optString(u.body, "phone", 64)) {
    throw unprocessable(
      "Updating password of an anonymous user without an email or phone is not allowed",
    );
  }
  await checkPassword(s, u.password);
  await checkCurrentPassword(u);
  if (user.encrypted_password && await s.passwords.verify(u.password, user.encrypted_password)) {
    throw new ApiError(
      422,
      "same_password",
      "New password should be different from the old password.",
    );
  }
  u.fields.encrypted_password = await s.passwords.hash(u.password);
  u.passwordChanged = true;
  u.after.push(async (written) => {
    // Sessions elsewhere must sign in again with the new password.
    await s.sessions.logout(written.id, u.caller.session?.id, "others");
    await s.audit.record({
      action: "user_updated_password",
      actorId: written.id,
      actorUsername: written.email ?? written.phone ?? "",
      logType: "user",
      ip: clientIp(u.c),
    });
  });
}

/**
 * The steps of PUT /user, in the order they run: what can refuse the request
 * (the reauthentication nonce, an address taken by another user, a bad
 * password) runs before what sends mail or hashes.
 */
export const USER_UPDATE_STEPS: readonly UserUpdateStep[] = [
  phoneUpdateStep,
  nonceStep,
  emailChangeStep,
  passwordNoticeStep,
  dataStep,
  passwordStep,
];

/** PUT /user. */
export async function updateUser(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  const body = await readBody(c);
  const u: UserUpdate = {
    c,
    s,
    caller,
    body,
    user: caller.user,
    fields: {},
    password: optString(body, "password", 1024),
    passwordChanged: false,
    effects: [],
    after: [],
  };
  // What can be refused without side effects is refused before any step sends a code or
  // uses up a nonce, so a refused request changes nothing.
  const data = optObject(body, "data");
  const u0 = caller.user;
  if (u.password && !(u0.is_anonymous && !u0.email && !u0.phone && !body.email && !body.phone)) {
    await checkPassword(s, u.password);
  }
  // With reauthentication on, the nonce step checks it after asking for the nonce (GoTrue's order).
  if (!s.config.security.updatePasswordRequireReauthentication) await checkCurrentPassword(u);
  for (const step of USER_UPDATE_STEPS) await step(u);
  // Every step accepted the request: now the codes go out (PUT {phone, email: taken}
  // used to send its SMS before the e-mail step refused it).
  for (const fn of u.effects) await fn();
  let user = caller.user;
  if (Object.keys(u.fields).length) {
    // The steps checked that no other user has the new e-mail or phone; one that took it
    // since gets the answer it would get a moment later: 422 email_exists / phone_exists.
    user = await s.users.updateMerging(
      caller.user.id,
      u.fields,
      data
        ? (current) => {
          // Merged over the row as it is once locked: concurrent updates of the metadata
          // each land, as they would one after the other.
          u.fields.raw_user_meta_data = mergeMetadata(current.raw_user_meta_data ?? {}, data);
          checkObjectBounds("data", u.fields.raw_user_meta_data);
        }
        : undefined,
    ).catch((e) => {
      throw uniqueViolationAnswer(e) ?? e;
    }) ??
      (() => {
        throw new ApiError(404, "user_not_found", "User not found");
      })();
    if (!u.passwordChanged) {
      await s.audit.record({
        action: "user_modified",
        actorId: user.id,
        actorUsername: user.email ?? user.phone ?? "",
        logType: "user",
        ip: clientIp(c),
      });
    }
  }
  for (const fn of u.after) await fn(user);
  // Steps may have written more (identities, one-time tokens): answer with the stored row.
  const fresh = await s.users.findById(user.id) ?? user;
  return c.json(await userResponse(s, fresh));
}
