/**
 * The body of the admin user endpoints (GoTrue's admin.go): parsed and validated into
 * the user columns it sets. Every problem is a 4xx naming the field.
 */
import type { Config } from "../config/mod.ts";
import { normalizePhone } from "../auth/users.ts";
import type { AdminUserParams } from "../auth/admin_flows.ts";
export type { AdminUserParams };
import { parseDurationMs } from "../util/duration.ts";
import { badRequest, unprocessable } from "./errors.ts";
import { type Body, checkEmail, isUuid, optBool, optObject, optString } from "./input.ts";

const HASH =
  /^(\$2[abxy]\$\d{2}\$[./A-Za-z0-9]{53}|\$argon2(id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+)$/;

const MAX_GO_DURATION_MS = 9_223_372_036_854.775;

/** Parses and validates the admin user body. */
export function parseAdminUser(body: Body, _config: Config, now: Date): AdminUserParams {
  const p: AdminUserParams = {};
  const id = optString(body, "id", 64);
  if (id !== undefined) {
    if (!isUuid(id)) throw badRequest("ID must conform to the uuid v4 format");
    if (/^[0-]+$/.test(id)) throw badRequest("ID cannot be a nil uuid");
    p.id = id.toLowerCase();
  }
  const email = optString(body, "email", 320);
  if (email) p.email = checkEmail(email);
  const phone = optString(body, "phone", 64);
  if (phone) {
    const n = normalizePhone(phone);
    if (!n) throw unprocessable("Invalid phone number format (E.164 required): phone");
    p.phone = n;
  }
  p.passwordSent = optString(body, "password", 1024);
  p.password = p.passwordSent || undefined;
  const hash = optString(body, "password_hash", 1024);
  if (hash) {
    if (p.password) throw badRequest("Only a password or a password_hash should be provided");
    if (!HASH.test(hash)) {
      throw badRequest("password_hash must be a bcrypt ($2a$, $2b$, $2y$) or argon2 hash");
    }
    p.passwordHash = hash;
  }
  p.emailConfirm = optBool(body, "email_confirm");
  p.phoneConfirm = optBool(body, "phone_confirm");
  p.userMetadata = optObject(body, "user_metadata");
  p.appMetadata = optObject(body, "app_metadata");
  const role = optString(body, "role", 255);
  if (role) p.role = role.trim();
  const ban = optString(body, "ban_duration", 64);
  if (ban) {
    if (ban === "none") p.bannedUntil = null;
    else {
      const ms = parseDurationMs(ban);
      // Go's durations end at 2562047h47m16.854775807s (int64 nanoseconds); GoTrue refuses more.
      if (ms === null || ms < 0 || ms > MAX_GO_DURATION_MS || !/[a-zµ]$/.test(ban.trim())) {
        throw badRequest(
          `ban_duration must be a duration like 24h, 30m or 1h30m (units ns, us, ms, s, m, h) or "none"`,
        );
      }
      p.bannedUntil = new Date(now.getTime() + ms);
    }
  }
  return p;
}
