/**
 * Mail: the SMTP server, and the mailer (what is sent, with which subjects,
 * templates and links, and which notifications). Subjects are Go templates
 * and are checked when the configuration is read (mail/go_template.ts).
 */
import { templateProblem } from "../mail/go_template.ts";
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const MAIL_SECTION: SectionDoc = {
  title: "Mail",
  about:
    "The SMTP server, the mails' subjects, templates and links, and the notification mails ([server/email.md](server/email.md)). Subjects and templates in other languages: the same names with a locale suffix, e.g. `AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_DE` ([server/email.md](server/email.md#mail-in-the-users-language)).",
};

/** Mail kinds, as `MAILER_SUBJECTS_<KIND>` / `MAILER_TEMPLATES_<KIND>` name them. */
export const MAIL_KINDS = [
  "invite",
  "confirmation",
  "recovery",
  "magic_link",
  "email_change",
  "reauthentication",
  "password_changed_notification",
  "email_changed_notification",
  "phone_changed_notification",
  "identity_linked_notification",
  "identity_unlinked_notification",
  "mfa_factor_enrolled_notification",
  "mfa_factor_unenrolled_notification",
] as const;
export type MailKind = typeof MAIL_KINDS[number];

const DEFAULT_SUBJECTS: Record<MailKind, string> = {
  invite: "You have been invited",
  confirmation: "Confirm Your Signup",
  recovery: "Reset Your Password",
  magic_link: "Your Magic Link",
  email_change: "Confirm Email Change",
  reauthentication: "Confirm reauthentication",
  password_changed_notification: "Your password has been changed",
  email_changed_notification: "Your email address has been changed",
  phone_changed_notification: "Your phone number has been changed",
  identity_linked_notification: "A new identity has been linked",
  identity_unlinked_notification: "An identity has been unlinked",
  mfa_factor_enrolled_notification: "A new MFA factor has been enrolled",
  mfa_factor_unenrolled_notification: "An MFA factor has been unenrolled",
};

export const NOTIFICATIONS = [
  "password_changed",
  "email_changed",
  "phone_changed",
  "identity_linked",
  "identity_unlinked",
  "mfa_factor_enrolled",
  "mfa_factor_unenrolled",
] as const;
export type NotificationKind = typeof NOTIFICATIONS[number];

/** The SMTP server's settings. */
export interface SmtpConfig {
  host: string;
  port: number;
  user: string;
  pass: string;
  adminEmail: string;
  senderName: string;
  maxFrequency: number;
  /** Seconds between magic links / recovery mails to one address. */
  linkFrequency: number;
  /** Seconds to connect and to wait for each answer of the mail server. */
  timeoutSec: number;
}

/** The mailer's settings. */
export interface MailerConfig {
  autoconfirm: boolean;
  otpExp: number;
  otpLength: number;
  secureEmailChangeEnabled: boolean;
  urlPaths: { invite: string; confirmation: string; recovery: string; emailChange: string };
  subjects: Record<MailKind, string>;
  templates: Record<MailKind, string>;
  /**
   * Subjects and template URLs per locale ("de", "pt-br"), from the
   * `MAILER_SUBJECTS_<KIND>_<LOCALE>` / `MAILER_TEMPLATES_<KIND>_<LOCALE>`
   * variables that are set (mail/locale.ts chooses among them).
   */
  localized: Record<string, LocalizedTexts>;
  notifications: Record<NotificationKind, boolean>;
  templateTimeoutSec: number;
  /** Development only: with SMTP_HOST unset, the log line of a mail carries its links. */
  logLinks: boolean;
  /**
   * GET /verify answers a page whose button confirms the link (a form POST), so
   * that mail scanners and link previews, which open links but press nothing,
   * use up no token (api/verify_page.ts).
   */
  linkConfirmationPage: boolean;
}

/** One locale's subjects and template URLs; a kind it leaves out keeps the default. */
export interface LocalizedTexts {
  subjects: Partial<Record<MailKind, string>>;
  templates: Partial<Record<MailKind, string>>;
}

/** The mail section's part of `Config`. */
export interface MailSettings {
  smtp: SmtpConfig;
  mailer: MailerConfig;
}

export function readMail(r: ConfigReader): MailSettings {
  return { smtp: readSmtp(r), mailer: readMailer(r) };
}

function readSmtp(r: ConfigReader): SmtpConfig {
  const adminEmail = r.string("SMTP_ADMIN_EMAIL", {
    default: "admin@localhost",
    doc: "From address",
  });
  return {
    host: r.string("SMTP_HOST", { doc: "mail server; unset: mails are logged instead" }),
    port: r.int("SMTP_PORT", { default: 587, min: 1, max: 65535, doc: "mail server port" }),
    user: r.string("SMTP_USER", { doc: "SMTP user" }),
    pass: r.string("SMTP_PASS", { doc: "SMTP password" }),
    adminEmail,
    senderName: r.string("SMTP_SENDER_NAME", { doc: "From name (default: SMTP_ADMIN_EMAIL)" }) ||
      adminEmail,
    maxFrequency: r.seconds("SMTP_MAX_FREQUENCY", {
      default: 900,
      doc: "seconds between mails of one kind to one address",
    }),
    linkFrequency: r.seconds("SMTP_LINK_FREQUENCY", {
      default: 60,
      doc: "seconds between magic links / recovery mails to one address",
    }),
    timeoutSec: r.seconds("SMTP_TIMEOUT", {
      default: 10,
      doc: "seconds to connect to and wait for each answer of the mail server",
    }),
  };
}

function readMailer(r: ConfigReader): MailerConfig {
  const urlPath = (kind: string, what: string) =>
    r.string(`MAILER_URLPATHS_${kind}`, {
      default: "/verify",
      doc: `path of the link in the ${what} mail`,
    });
  return {
    autoconfirm: r.bool("MAILER_AUTOCONFIRM", { doc: "sign-ups need no e-mail confirmation" }),
    otpExp: r.seconds("MAILER_OTP_EXP", {
      default: 86400,
      doc: "validity of an e-mail link or code",
    }),
    otpLength: r.int("MAILER_OTP_LENGTH", {
      default: 6,
      min: 6,
      max: 10,
      doc: "digits of an e-mail code",
    }),
    secureEmailChangeEnabled: r.bool("MAILER_SECURE_EMAIL_CHANGE_ENABLED", {
      default: true,
      doc: "an e-mail change is confirmed by both addresses",
    }),
    urlPaths: {
      invite: urlPath("INVITE", "invite"),
      confirmation: urlPath("CONFIRMATION", "confirmation"),
      recovery: urlPath("RECOVERY", "recovery"),
      emailChange: urlPath("EMAIL_CHANGE", "e-mail change"),
    },
    ...readTexts(r),
    notifications: readNotifications(r),
    templateTimeoutSec: r.seconds("MAILER_TEMPLATE_TIMEOUT", {
      default: 10,
      doc: "template fetch timeout",
    }),
    logLinks: r.bool("MAILER_LOG_LINKS", {
      doc:
        "development only: with SMTP_HOST unset, write each mail's links (credentials) to the log",
    }),
    linkConfirmationPage: r.bool("MAILER_LINK_CONFIRMATION_PAGE", {
      doc:
        "GET /verify shows a page whose button confirms the link, so mail scanners that open links use up nothing",
    }),
  };
}

/** A locale suffix of a setting name: `DE`, `PT_BR`, `ZH_HANT`. */
const LOCALE_SUFFIX = /^[A-Z]{2,3}(_[A-Z0-9]{2,8})?$/;

/**
 * The per-locale subjects and templates that are set: every
 * `<PREFIX>MAILER_SUBJECTS_<KIND>_<LOCALE>` / `..._TEMPLATES_...` variable.
 * Each is read (and so documented and not warned about as unknown); a
 * subject is checked as the default ones are.
 */
function readLocalized(r: ConfigReader): Record<string, LocalizedTexts> {
  const out: Record<string, LocalizedTexts> = {};
  const prefix = r.name("MAILER_");
  for (const name of Object.keys(r.env).sort()) {
    if (!name.startsWith(prefix)) continue;
    const rest = name.slice(prefix.length);
    const part = rest.startsWith("SUBJECTS_")
      ? "subjects"
      : rest.startsWith("TEMPLATES_")
      ? "templates"
      : null;
    if (!part) continue;
    const after = rest.slice(part.length + 1);
    const kind = MAIL_KINDS.find((k) => after.startsWith(`${k.toUpperCase()}_`));
    const suffix = kind ? after.slice(kind.length + 1) : "";
    if (!kind || !LOCALE_SUFFIX.test(suffix)) continue;
    const locale = suffix.replace("_", "-").toLowerCase();
    const spec = `MAILER_${rest}`;
    const value = r.string(spec, {
      doc: `${part === "subjects" ? "subject" : "URL of the HTML template"} of the ${
        kind.replaceAll("_", " ")
      } mail in ${locale}`,
    });
    if (!value) continue;
    if (part === "subjects") {
      const why = templateProblem(value);
      if (why) r.problem(`${r.name(spec)}: ${why}`);
    }
    (out[locale] ??= { subjects: {}, templates: {} })[part][kind] = value;
  }
  return out;
}

/** Each mail kind's subject (a Go template, checked here) and HTML template URL. */
function readTexts(r: ConfigReader): Pick<MailerConfig, "subjects" | "templates" | "localized"> {
  const subjects = {} as Record<MailKind, string>;
  const templates = {} as Record<MailKind, string>;
  for (const k of MAIL_KINDS) {
    const KIND = k.toUpperCase();
    subjects[k] = r.string(`MAILER_SUBJECTS_${KIND}`, {
      default: DEFAULT_SUBJECTS[k],
      doc: `subject of the ${k.replaceAll("_", " ")} mail`,
    });
    const why = templateProblem(subjects[k]);
    if (why) r.problem(`${r.name(`MAILER_SUBJECTS_${KIND}`)}: ${why}`);
    templates[k] = r.string(`MAILER_TEMPLATES_${KIND}`, {
      doc: `URL of the HTML template of the ${k.replaceAll("_", " ")} mail`,
    });
  }
  return { subjects, templates, localized: readLocalized(r) };
}

function readNotifications(r: ConfigReader): Record<NotificationKind, boolean> {
  const notifications = {} as Record<NotificationKind, boolean>;
  for (const n of NOTIFICATIONS) {
    notifications[n] = r.bool(`MAILER_NOTIFICATIONS_${n.toUpperCase()}_ENABLED`, {
      doc: `send the ${n.replaceAll("_", " ")} notification mail`,
    });
  }
  return notifications;
}
