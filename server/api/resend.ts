/**
 * POST /resend {type, email | phone}: sends the pending mail again, within
 * the send limits: `signup` (the confirmation of an unconfirmed address),
 * `email_change` (the change mails, to the new address and, with secure
 * change, to the current one). `sms` and `phone_change` belong to the phone
 * side (api/phone.ts). The answer is `{message_id}` whether or not there
 * was anything to send, so nobody learns which addresses have accounts.
 */
import type { Hono } from "../../deps.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import type { UserRow } from "../auth/users.ts";
import { sendActionMail, withoutMail } from "../mail/flows.ts";
import type { Services } from "../services.ts";
import { type AppEnv, clientIp } from "./context.ts";
import { badRequest } from "./errors.ts";
import { checkEmail, optString, readBody, redirectToParam, reqString } from "./input.ts";
import { requireEmailEnabled } from "./magiclink.ts";
import { resendByPhone } from "./phone.ts";

async function findEmailChange(s: Services, email: string): Promise<UserRow | null> {
  const byCurrent = await s.users.findByEmail(email);
  if (byCurrent?.email_change) return byCurrent;
  const rows = await s.db.query<UserRow>(
    `SELECT * FROM ${s.users.table} WHERE email_change = $1 AND deleted_at IS NULL
     ORDER BY email_change_sent_at DESC NULLS LAST LIMIT 1`,
    [email],
  );
  return rows[0] ?? null;
}

/** POST /resend. */
export function resendRoutes(app: Hono<AppEnv>, s: Services): void {
  app.post("/resend", async (c) => {
    const body = await readBody(c);
    const type = reqString(body, "type", 32);
    if (type === "sms" || type === "phone_change") return await resendByPhone(c, s, body, type);
    if (type !== "signup" && type !== "email_change") {
      throw badRequest("type must be one of signup, email_change, sms, phone_change");
    }
    if (optString(body, "phone", 64)) {
      throw badRequest(`phone cannot be used with type ${type}; use email`);
    }
    requireEmailEnabled(s);
    const email = checkEmail(reqString(body, "email", 320));
    const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
    const messageId = crypto.randomUUID();
    if (type === "signup") {
      const user = await s.users.findByEmail(email);
      if (!user || user.email_confirmed_at) {
        await withoutMail(s, "confirmation", email); // same limits, same time, no mail
        return c.json({ message_id: messageId });
      }
      // The pending sign-up's confirmation again (auth/confirm.ts: what the row's sign-up set).
      await sendActionMail(s, user, "confirmation", { redirectTo, signup: {} });
      await s.audit.record({
        action: "user_confirmation_requested",
        actorId: user.id,
        actorUsername: email,
        logType: "user",
        traits: { channel: "email", resend: true },
        ip: clientIp(c),
      });
      return c.json({ message_id: messageId });
    }
    let user = await findEmailChange(s, email);
    if (!user?.email_change) {
      const started = s.mailer.timing.now();
      await withoutMail(s, "email_change_new", email);
      if (s.config.mailer.secureEmailChangeEnabled) {
        await s.mailer.timing.pad("email_change_current", started);
      }
      return c.json({ message_id: messageId });
    }
    user = await s.users.update(user.id, { email_change_confirm_status: 0 }) ?? user;
    user = await sendActionMail(s, user, "email_change_new", { redirectTo });
    if (s.config.mailer.secureEmailChangeEnabled && user.email) {
      await sendActionMail(s, user, "email_change_current", { redirectTo });
    }
    return c.json({ message_id: messageId });
  });
}
