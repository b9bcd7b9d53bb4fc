/**
 * The e-mail action mails: confirmation, invite, recovery, magic link, e-mail
 * change (to the new and the current address) and the reauthentication
 * nonce. Each one issues a one-time token (a link secret and a code, both in
 * the mail), builds the link to `/verify`, sends the mail within the send
 * limits and stamps the user's `*_sent_at` column.
 *
 *   await sendActionMail(s, user, "recovery", { redirectTo, flowStateId });
 *   const link = await generateActionLink(s, user, "magiclink", { redirectTo }); // no mail
 *
 * The token is issued only once the send limits granted the mail, so a
 * refused request (429) leaves the link of the previous mail working, also
 * when concurrent requests race for the same slot.
 *
 * An answer that sends nothing where a known address would get a mail
 * (unknown address on /recover, /otp, /resend, a repeated /signup) calls
 *
 *   await withoutMail(s, "recovery", email);
 *
 * which refuses with the same 429 as a real send would and takes about as
 * long as one, so neither status nor timing tells the two apart.
 */
import type { MailKind } from "../config/mod.ts";
import { type SignupClaim, signupTokenData } from "./confirm.ts";
import type { TokenType } from "./otp.ts";
import type { UserFields, UserRow } from "./users.ts";
import type { Domain } from "./deps.ts";
import type { TemplateVars } from "../mail/templates.ts";

/** The actions that send a mail with a link and a code. */
export type EmailAction =
  | "confirmation"
  | "invite"
  | "recovery"
  | "magiclink"
  | "email_change_new"
  | "email_change_current"
  | "reauthentication";

interface ActionSpec {
  mail: MailKind;
  /** `type` in the link (GoTrue's verification types). */
  linkType: string;
  path: (s: Domain) => string;
  interval: (s: Domain) => number;
  sentAt: keyof UserFields;
  link: boolean;
}

/** Both e-mail change mails: the new address and, with secure change, the current one. */
const EMAIL_CHANGE: ActionSpec = {
  mail: "email_change",
  linkType: "email_change",
  path: (s) => s.config.mailer.urlPaths.emailChange,
  interval: (s) => s.config.smtp.maxFrequency,
  sentAt: "email_change_sent_at",
  link: true,
};

const SPECS: Record<EmailAction, ActionSpec> = {
  confirmation: {
    mail: "confirmation",
    linkType: "signup",
    path: (s) => s.config.mailer.urlPaths.confirmation,
    interval: (s) => s.config.smtp.maxFrequency,
    sentAt: "confirmation_sent_at",
    link: true,
  },
  invite: {
    mail: "invite",
    linkType: "invite",
    path: (s) => s.config.mailer.urlPaths.invite,
    interval: () => 0,
    sentAt: "invited_at",
    link: true,
  },
  recovery: {
    mail: "recovery",
    linkType: "recovery",
    path: (s) => s.config.mailer.urlPaths.recovery,
    interval: (s) => s.config.smtp.linkFrequency,
    sentAt: "recovery_sent_at",
    link: true,
  },
  magiclink: {
    mail: "magic_link",
    linkType: "magiclink",
    path: (s) => s.config.mailer.urlPaths.confirmation,
    interval: (s) => s.config.smtp.linkFrequency,
    sentAt: "recovery_sent_at",
    link: true,
  },
  email_change_new: EMAIL_CHANGE,
  email_change_current: EMAIL_CHANGE,
  reauthentication: {
    mail: "reauthentication",
    linkType: "reauthentication",
    path: () => "",
    interval: (s) => s.config.smtp.maxFrequency,
    sentAt: "reauthentication_sent_at",
    link: false,
  },
};

/** Options of an action mail. */
export interface ActionOptions {
  /** Already checked against SITE_URL / URI_ALLOW_LIST (auth/redirect.ts). */
  redirectTo?: string;
  /** PKCE flow the verified link continues (auth/pkce.ts). */
  flowStateId?: string;
  /** Seconds between two such mails to the address, instead of the action's own. */
  intervalSec?: number;
  /** What the interval counts per instead of the address (mailer.ts `limitKey`). */
  limitKey?: string;
  /**
   * The sign-up this confirmation belongs to (auth/confirm.ts): what its
   * verification keeps of the password and metadata. Without it, confirming
   * an unproven account keeps neither.
   */
  signup?: SignupClaim;
  /** Issue the token beside the user's pending ones of its type (a repeated sign-up's). */
  alongside?: boolean;
}

/** A generated link and its parts (POST /admin/generate_link answers these). */
export interface ActionLink {
  actionLink: string;
  /** The code to type. */
  emailOtp: string;
  /** The link secret (`token` in the link, `token_hash` of POST /verify). */
  hashedToken: string;
  redirectTo: string;
  /** The id of the issued one-time token. */
  tokenId: string;
}

function recipientOf(user: UserRow, action: EmailAction): string {
  const to = action === "email_change_new" ? user.email_change : user.email;
  if (!to) throw new Error(`user has no address for ${action}`);
  return to;
}

/** The prefix of a PKCE flow's link token (GoTrue's PKCEPrefix); auth/otp.ts ignores it. */
export const PKCE_PREFIX = "pkce_";

/** `{API_EXTERNAL_URL}{path}?token=…&type=…&redirect_to=…` (an absolute path setting wins). */
export function verifyUrl(
  s: Domain,
  path: string,
  token: string,
  type: string,
  redirectTo: string,
): string {
  const base = s.config.api.externalUrl.replace(/\/+$/, "");
  const u = /^https?:\/\//i.test(path) ? new URL(path) : new URL(base + (path || "/verify"));
  u.searchParams.set("token", token);
  u.searchParams.set("type", type);
  u.searchParams.set("redirect_to", redirectTo);
  return u.toString();
}

/** Issues the token of an action and builds its link, without sending anything. */
export async function generateActionLink(
  s: Domain,
  user: UserRow,
  action: EmailAction,
  opts: ActionOptions = {},
): Promise<ActionLink> {
  const spec = SPECS[action];
  const recipient = recipientOf(user, action);
  const redirectTo = opts.redirectTo || s.config.siteUrl;
  const t = await s.otp.issue({
    userId: user.id,
    type: action satisfies TokenType,
    recipient,
    ttlSec: s.config.mailer.otpExp,
    codeLength: s.config.mailer.otpLength,
    link: spec.link,
    data: {
      redirect_to: redirectTo,
      ...(opts.flowStateId ? { flow_state_id: opts.flowStateId } : {}),
      ...(opts.signup ? signupTokenData(opts.signup) : {}),
    },
    alongside: opts.alongside,
  });
  // A PKCE flow's link token carries GoTrue's "pkce_" prefix: a failed link then still
  // answers in the redirect's query, where a server-side app reads it (api/verify.ts).
  const link = t.link && opts.flowStateId ? `${PKCE_PREFIX}${t.link}` : t.link;
  return {
    actionLink: link ? verifyUrl(s, spec.path(s), link, spec.linkType, redirectTo) : "",
    emailOtp: t.code,
    hashedToken: link ?? "",
    redirectTo,
    tokenId: t.id,
  };
}

/**
 * Sends the mail of an action to the user (429 over a limit, 500 when the
 * mail server fails) and returns the user with its `*_sent_at` stamped.
 */
export async function sendActionMail(
  s: Domain,
  user: UserRow,
  action: EmailAction,
  opts: ActionOptions = {},
): Promise<UserRow> {
  const spec = SPECS[action];
  const to = recipientOf(user, action);
  const started = s.mailer.timing.now();
  let issued: string | undefined;
  const vars = async (): Promise<TemplateVars> => {
    const link = await generateActionLink(s, user, action, opts);
    issued = link.tokenId;
    return {
      ConfirmationURL: link.actionLink,
      Token: link.emailOtp,
      TokenHash: link.hashedToken,
      SiteURL: s.config.siteUrl,
      Email: user.email ?? "",
      NewEmail: user.email_change ?? "",
      RedirectTo: link.redirectTo,
      Data: user.raw_user_meta_data ?? {},
    };
  };
  try {
    await s.mailer.send({
      kind: spec.mail,
      to,
      vars,
      intervalSec: opts.intervalSec ?? spec.interval(s),
      userId: user.id,
      limitKey: opts.limitKey,
    });
  } catch (e) {
    // The token of a mail that did not go out is of no use to anyone.
    if (issued) await s.otp.revokeId(issued).catch(() => {});
    throw e;
  }
  const updated = await s.users.update(user.id, { [spec.sentAt]: s.clock.now() }) ?? user;
  s.mailer.timing.observe(action, s.mailer.timing.now() - started);
  return updated;
}

/** What SMTP_MAX_FREQUENCY counts e-mail change mails per: the user (GoTrue's email_change_sent_at). */
export function emailChangeLimitKey(userId: string): string {
  return `user:${userId}`;
}

/**
 * The e-mail change mails of a user with a pending change (PUT /user, POST
 * /resend): to the new address, and to the current one too with secure
 * change. SMTP_MAX_FREQUENCY counts per user (`emailChangeLimitKey`), checked
 * before anything is sent; then the record of confirmed sides starts again,
 * before the new links exist. Returns the user with email_change_sent_at
 * stamped.
 */
export async function sendEmailChangeMails(
  s: Domain,
  user: UserRow,
  opts: { redirectTo?: string; flowStateId?: string },
): Promise<UserRow> {
  const limitKey = emailChangeLimitKey(user.id);
  await s.sendLimits.check({
    channel: "email",
    recipient: limitKey,
    kind: "email_change",
    intervalSec: s.config.smtp.maxFrequency,
  });
  // New links start the record of confirmed sides again (auth/email_change.ts), before
  // the first of them can be used.
  await s.users.update(user.id, { email_change_confirm_status: 0 });
  const sent = await sendActionMail(s, user, "email_change_new", { ...opts, limitKey });
  if (!s.config.mailer.secureEmailChangeEnabled || !user.email) return sent;
  // One request, two mails: the interval was counted by the first.
  return await sendActionMail(s, sent, "email_change_current", {
    ...opts,
    limitKey,
    intervalSec: 0,
  });
}

/**
 * Stands in for `sendActionMail` where there is nobody to send to: the same
 * send limits refuse (429) as they would for a real mail to `to`, nothing is
 * sent, and the answer waits about as long as sending takes.
 */
export async function withoutMail(s: Domain, action: EmailAction, to: string): Promise<void> {
  const started = s.mailer.timing.now();
  const spec = SPECS[action];
  await s.sendLimits.decoy({
    channel: "email",
    recipient: to.toLowerCase(),
    kind: spec.mail,
    intervalSec: spec.interval(s),
  });
  await s.mailer.timing.pad(action, started);
}
