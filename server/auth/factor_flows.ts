/**
 * The MFA use cases of the /factors endpoints and the admin factor routes:
 * enroll, challenge (a phone factor's code by SMS), verify (the session
 * becomes aal2), unenroll, and an admin's delete and update. Each is audited;
 * a verified factor's enrolment or removal sends its notification mail.
 */
import type { Domain, RequestMeta } from "./deps.ts";
import type { Actor } from "./admin_flows.ts";
import { uniqueViolationAnswer } from "./errors.ts";
import type { FactorRow, FactorType } from "./mfa.ts";
import type { SessionRow, TokenSet } from "./sessions.ts";
import type { UserRow } from "./users.ts";

async function audit(
  d: Domain,
  meta: RequestMeta,
  user: UserRow,
  action:
    | "factor_in_progress"
    | "challenge_created"
    | "verification_attempted"
    | "factor_unenrolled",
  traits: Record<string, unknown>,
): Promise<void> {
  await d.audit.record({
    action,
    actorId: user.id,
    actorUsername: user.email ?? user.phone ?? "",
    logType: "factor",
    traits,
    ip: meta.ip,
  });
}

/** The enrolled / unenrolled notification mail (behind its switch; never fails the request). */
async function notify(
  d: Domain,
  kind: "mfa_factor_enrolled" | "mfa_factor_unenrolled",
  user: UserRow,
  type: FactorType,
): Promise<void> {
  await d.mailer.notify(kind, user, { FactorType: type });
}

/**
 * Enrolls a factor. The name check runs under the user's lock, so only a name the check and
 * the unique index compare differently could slip through it: the index's 422
 * mfa_factor_name_conflict is the answer then too, never a 500.
 */
export async function enrollFactor(
  d: Domain,
  user: UserRow,
  session: SessionRow,
  factor: Parameters<Domain["mfa"]["enroll"]>[2],
  meta: RequestMeta,
): Promise<FactorRow> {
  let row: FactorRow;
  try {
    row = await d.mfa.enroll(user.id, session, factor);
  } catch (e) {
    throw uniqueViolationAnswer(e) ?? e;
  }
  await audit(d, meta, user, "factor_in_progress", { factor_id: row.id, factor_type: factor.type });
  return row;
}

/** A challenge of `factor`; a phone factor gets its code by SMS (within the SMS limits). */
export async function challengeFactor(
  d: Domain,
  user: UserRow,
  factor: FactorRow,
  meta: RequestMeta,
): Promise<{ id: string; expiresAt: number }> {
  await d.mfa.challenges.assertCanChallenge(factor);
  let code: string | undefined;
  if (factor.factor_type === "phone") {
    ({ code } = await d.sms.sendCode({ phone: factor.phone ?? "", kind: "mfa_challenge" }));
  }
  const challenge = await d.mfa.challenges.createChallenge(factor, meta.ip, code);
  await audit(d, meta, user, "challenge_created", {
    factor_id: factor.id,
    factor_status: factor.status,
  });
  return { id: challenge.id, expiresAt: d.mfa.challenges.expiresAt(challenge) };
}

/** Checks a challenge's code; the session becomes aal2 and gets a new token set. */
export async function verifyFactor(
  d: Domain,
  user: UserRow,
  session: SessionRow,
  factor: FactorRow,
  challengeId: string,
  code: string,
  meta: RequestMeta,
): Promise<TokenSet> {
  const done = await d.mfa.challenges.verify(factor, session.id, challengeId, code, meta.ip);
  const fresh = await d.users.findById(user.id) ?? user;
  await audit(d, meta, fresh, "verification_attempted", {
    factor_id: factor.id,
    challenge_id: challengeId,
    factor_type: factor.factor_type,
  });
  const tokens = await d.sessions.reissue(fresh, done.session);
  if (done.newlyVerified) await notify(d, "mfa_factor_enrolled", fresh, factor.factor_type);
  return tokens;
}

/** Unenrolls the user's own factor (the aal check is the route's). */
export async function unenrollFactor(
  d: Domain,
  user: UserRow,
  session: SessionRow,
  factorId: string,
  meta: RequestMeta,
): Promise<FactorRow> {
  const row = await d.mfa.deleteFactor(user.id, factorId);
  await audit(d, meta, user, "factor_unenrolled", {
    factor_id: row.id,
    factor_status: row.status,
    session_id: session.id,
  });
  if (row.status === "verified") await notify(d, "mfa_factor_unenrolled", user, row.factor_type);
  return row;
}

/** An admin deletes a user's factor. */
export async function deleteFactorAsAdmin(
  d: Domain,
  user: UserRow,
  factorId: string,
  actor: Actor,
  meta: RequestMeta,
): Promise<FactorRow> {
  const row = await d.mfa.deleteFactor(user.id, factorId);
  await d.audit.record({
    action: "factor_deleted",
    ...actor,
    logType: "factor",
    traits: { user_id: user.id, factor_id: row.id },
    ip: meta.ip,
  });
  if (row.status === "verified") await notify(d, "mfa_factor_unenrolled", user, row.factor_type);
  return row;
}

/** An admin renames a factor or gives a phone factor a new number. */
export async function updateFactorAsAdmin(
  d: Domain,
  user: UserRow,
  factorId: string,
  change: { friendlyName?: string; phone?: string },
  actor: Actor,
  meta: RequestMeta,
): Promise<FactorRow> {
  const row = await d.mfa.updateFactor(user.id, factorId, change).catch((e) => {
    throw uniqueViolationAnswer(e) ?? e;
  });
  await d.audit.record({
    action: "factor_updated",
    ...actor,
    logType: "factor",
    traits: { user_id: user.id, factor_id: row.id, factor_type: row.factor_type },
    ip: meta.ip,
  });
  return row;
}
