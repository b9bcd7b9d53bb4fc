/**
 * Multi-factor authentication endpoints, as `@supabase/auth-js` calls them:
 *
 * - POST /factors: enroll a `totp` factor (answers the secret, the
 *   `otpauth://` URI and an SVG QR code, once) or a `phone` factor;
 * - POST /factors/<id>/challenge: a challenge (a phone factor gets its code by SMS);
 * - POST /factors/<id>/verify: checks the code, raises the session to aal2,
 *   answers a new token set for the same session;
 * - DELETE /factors/<id>: unenroll (aal2 needed once the user has a verified factor);
 * - GET /admin/users/<id>/factors, PUT and DELETE /admin/users/<id>/factors/<factor_id>.
 *
 * The admin routes have one more path segment than /admin/users/<id>, so they
 * never meet the admin user routes.
 */
import {
  challengeFactor as challenge_,
  deleteFactorAsAdmin,
  enrollFactor as enroll,
  unenrollFactor as unenroll,
  updateFactorAsAdmin,
  verifyFactor as verify,
} from "../auth/factor_flows.ts";
import { actorOf } from "../auth/admin_flows.ts";
import { factorToJson } from "../auth/mfa.ts";
import type { SessionRow } from "../auth/sessions.ts";
import { newTotpSecret, otpauthUri } from "../auth/totp.ts";
import { normalizePhone, type UserRow } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { type Caller, callerOf, claimsOf, type Ctx } from "./context.ts";
import { requestMeta } from "./meta.ts";
import { ApiError, badRequest } from "./errors.ts";
import { isUuid, optString, readBody, reqString, uuidParam } from "./input.ts";

/** The caller's session, which every factor operation needs. */
function callerSession(caller: Caller): SessionRow {
  if (!caller.session) {
    throw new ApiError(403, "session_not_found", "A valid session is required to manage factors");
  }
  return caller.session;
}

/** E.164 as GoTrue accepts it, stored as digits without "+" (like users' phones). */
function parsePhone(raw: string): string {
  const digits = normalizePhone(raw);
  if (!digits) throw badRequest("Invalid phone number format (E.164 required): phone");
  return digits;
}

function issuerOf(s: Services, given: string | undefined): string {
  if (given) return given;
  try {
    return new URL(s.config.siteUrl).host;
  } catch {
    return "authsvc";
  }
}

/** POST /factors: enroll. */
export async function enrollFactor(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  const session = callerSession(caller);
  const body = await readBody(c);
  const type = optString(body, "factor_type", 32);
  const friendlyName = optString(body, "friendly_name", 255) ?? "";
  if (type !== "totp" && type !== "phone") {
    throw badRequest("factor_type needs to be totp or phone");
  }
  if (type === "totp" && !s.config.mfa.totpEnabled) {
    throw new ApiError(422, "mfa_totp_enroll_not_enabled", "MFA enroll is disabled for TOTP");
  }
  if (type === "phone" && !s.config.mfa.phoneEnabled) {
    throw new ApiError(422, "mfa_phone_enroll_not_enabled", "MFA enroll is disabled for Phone");
  }
  const user = caller.user;
  if (type === "phone") {
    const phone = parsePhone(reqString(body, "phone", 32));
    const factor = await enroll(s, user, session, { type, friendlyName, phone }, requestMeta(c));
    return c.json({ id: factor.id, type, friendly_name: factor.friendly_name, phone });
  }
  const issuer = issuerOf(s, optString(body, "issuer", 255));
  const secret = newTotpSecret();
  const uri = otpauthUri({ secret, issuer, account: user.email || user.phone || user.id });
  const { qrSvg } = await import("../auth/qr.ts"); // the QR encoder loads at the first enrollment
  const factor = await enroll(s, user, session, { type, friendlyName, secret }, requestMeta(c));
  return c.json({
    id: factor.id,
    type,
    friendly_name: factor.friendly_name,
    totp: { qr_code: qrSvg(uri), secret, uri },
  });
}

/** POST /factors/:factor_id/challenge. */
export async function challengeFactor(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  callerSession(caller);
  const factor = await s.mfa.ownedFactor(caller.user.id, uuidParam(c, "factor_id"));
  await readBody(c); // `channel` (sms) is the only choice; the body is still checked
  const challenge = await challenge_(s, caller.user, factor, requestMeta(c));
  return c.json({ id: challenge.id, type: factor.factor_type, expires_at: challenge.expiresAt });
}

/** POST /factors/:factor_id/verify. */
export async function verifyFactor(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  const session = callerSession(caller);
  const factor = await s.mfa.ownedFactor(caller.user.id, uuidParam(c, "factor_id"));
  const body = await readBody(c);
  const challengeId = reqString(body, "challenge_id", 64);
  if (!isUuid(challengeId)) throw badRequest("challenge_id must be a UUID");
  const code = reqString(body, "code", 32).trim();
  const tokens = await verify(
    s,
    caller.user,
    session,
    factor,
    challengeId.toLowerCase(),
    code,
    requestMeta(c),
  );
  return c.json(tokens);
}

/** DELETE /factors/:factor_id: unenroll. */
export async function unenrollFactor(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  const session = callerSession(caller);
  const factor = await s.mfa.ownedFactor(caller.user.id, uuidParam(c, "factor_id"));
  // GoTrue (mfa.go UnenrollFactor): a verified factor goes only from an aal2 session,
  // 422 insufficient_aal; an unverified one (of no use for aal2) from any session.
  if (factor.status === "verified" && session.aal !== "aal2") {
    throw new ApiError(422, "insufficient_aal", "AAL2 required to unenroll verified factor");
  }
  const row = await unenroll(s, caller.user, session, factor.id, requestMeta(c));
  return c.json({ id: row.id });
}

/** GET /admin/users/:user_id/factors. */
export async function adminListFactors(c: Ctx, s: Services): Promise<Response> {
  const user = await adminTarget(s, c);
  return c.json((await s.mfa.listFactors(user.id)).map(factorToJson));
}

/** DELETE /admin/users/:user_id/factors/:factor_id. */
export async function adminDeleteFactor(c: Ctx, s: Services): Promise<Response> {
  const admin = claimsOf(c);
  const user = await adminTarget(s, c);
  const factorId = uuidParam(c, "factor_id");
  const row = await deleteFactorAsAdmin(s, user, factorId, actorOf(admin), requestMeta(c));
  return c.json(factorToJson(row));
}

/**
 * PUT /admin/users/<id>/factors/<factor_id> {friendly_name?, phone?}: renames a factor or
 * gives a phone factor a new number (GoTrue's adminUserUpdateFactor; an empty or missing
 * field is left as it is, `phone` is ignored for a TOTP factor). Answers the factor.
 */
export async function adminUpdateFactor(c: Ctx, s: Services): Promise<Response> {
  const admin = claimsOf(c);
  const user = await adminTarget(s, c);
  const factorId = uuidParam(c, "factor_id");
  const body = await readBody(c);
  const friendlyName = optString(body, "friendly_name", 255);
  const rawPhone = optString(body, "phone", 32);
  let phone: string | undefined;
  if (rawPhone && (await s.mfa.ownedFactor(user.id, factorId)).factor_type === "phone") {
    phone = parsePhone(rawPhone); // 400 validation_failed for a number that is not E.164
  }
  const row = await updateFactorAsAdmin(
    s,
    user,
    factorId,
    { friendlyName, phone },
    actorOf(admin),
    requestMeta(c),
  );
  return c.json(factorToJson(row));
}

async function adminTarget(s: Services, c: Ctx): Promise<UserRow> {
  const user = await s.users.findById(uuidParam(c, "user_id"));
  if (!user) throw new ApiError(404, "user_not_found", "User not found");
  return user;
}
