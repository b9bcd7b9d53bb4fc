/**
 * The mailer: renders a mail of one kind (subject from MAILER_SUBJECTS_<KIND>,
 * body from the MAILER_TEMPLATES_<KIND> URL or the built-in default) and sends
 * it over SMTP with nodemailer (loaded only when SMTP_HOST is set), From
 * `SMTP_SENDER_NAME <SMTP_ADMIN_EMAIL>`.
 * Without SMTP_HOST it sends nothing: the log names each message (kind,
 * recipient, subject), its links only with MAILER_LOG_LINKS (development
 * only: a link signs its holder in, and logs travel further than mail), and
 * the console's development inbox keeps it (console/inbox.ts). It says so
 * once at start.
 *
 * Every mail goes through the send limits (auth/send_limits.ts): over a limit
 * the caller gets a 429 and nothing is sent; a failed send is a 500
 * `email_send_failed` naming the mail ("Error sending confirmation email")
 * and does not count. A sent mail emits the `mail_sent` {kind} event.
 *
 * Other engineers send notification mails with
 *
 *   await s.mailer.notify("phone_changed", user, { OldPhone: "...", Phone: "..." });
 *
 * which does nothing when MAILER_NOTIFICATIONS_<KIND>_ENABLED is off or the
 * user has no e-mail, and never throws: a failure is logged and `false`
 * returned, so the change that triggered it stands.
 *
 * `timing` (timing.ts) records how long mails take to send, so answers that
 * send nothing can take as long (no account enumeration by speed).
 */
import type { DevInbox } from "../console/inbox.ts";
import { AuthError } from "../auth/errors.ts";
import type { Config, MailKind, NotificationKind } from "../config/mod.ts";
import type { Logger } from "../observe/log.ts";
import { DEFAULT_BODIES, htmlToText, linksIn, render, type TemplateVars } from "./templates.ts";
import { AnswerTiming } from "./timing.ts";
import { templateProblem } from "./go_template.ts";
import { localeOf, requestAcceptLanguage } from "./locale.ts";

export type { TemplateVars };

/**
 * The send limits every mail goes through (auth/send_limits.ts): `deliver`
 * runs only once the slot is granted; over a limit it throws a 429.
 */
export interface SendGate {
  send<T>(
    r: { channel: "email"; recipient: string; kind: string; intervalSec: number },
    deliver: () => Promise<T>,
  ): Promise<T>;
}

/** Where a sent mail is told (auth/events.ts: `mail_sent` {kind}). */
export interface SentEvents {
  emit(name: "mail_sent", attrs: { kind: MailKind }): void;
}

/** The recipient of a notification. */
export interface Recipient {
  email: string | null;
  raw_user_meta_data?: Record<string, unknown> | null;
}

/** One mail to send. */
export interface MailRequest {
  kind: MailKind;
  to: string;
  /**
   * The variables, or a function making them (issuing a token), called only
   * once the send limits granted the slot, so a refused mail issues nothing.
   */
  vars: TemplateVars | (() => Promise<TemplateVars>);
  /** Seconds between two mails of this kind to this address (0: none). */
  intervalSec?: number;
  /** The user the mail is about, when known (the send_email hook gets them). */
  userId?: string;
  /**
   * What `intervalSec` is counted per, instead of the address: `user:<id>`
   * counts the user's mails of this kind whatever the address (the e-mail
   * change, as GoTrue's email_change_sent_at).
   */
  limitKey?: string;
}

/** A rendered message. */
export interface RenderedMail {
  subject: string;
  html: string;
  text: string;
}

interface Transport {
  sendMail(msg: Record<string, unknown>): Promise<unknown>;
  close?(): void;
}

const TEMPLATE_TTL_MS = 5 * 60_000;
const TEMPLATE_RETRY_MS = 60_000;

/** Human name of a kind, for error messages and logs. */
export function kindLabel(kind: MailKind): string {
  return kind.replace(/_notification$/, " notification").replaceAll("_", " ");
}

/** Renders and sends mails. */
export class Mailer {
  /** The SMTP transport (nodemailer is loaded only with SMTP_HOST set). */
  #transport: Promise<Transport> | null = null;
  #templates = new Map<string, { body: string | null; at: number }>();
  /** How long mails take to send, imitated by answers that send none (timing.ts). */
  readonly timing = new AnswerTiming();
  /** Where log-only mails are kept for the console's development inbox (console/inbox.ts). */
  inbox: DevInbox | null = null;
  /** The send_email auth hook, when enabled: it sends instead of SMTP (auth/hooks_install.ts). */
  sendHook?: (req: MailRequest, to: string, vars: TemplateVars) => Promise<void>;

  constructor(
    readonly config: Config,
    readonly log: Logger,
    readonly events: SentEvents,
    readonly limits: SendGate,
    readonly clock: { now(): Date },
  ) {
    if (!config.smtp.host) {
      log.warn(
        config.mailer.logLinks
          ? "SMTP_HOST is not set: mails are written to the log, links included (AUTHSVC_MAILER_LOG_LINKS, development only), instead of being sent"
          : "SMTP_HOST is not set: mails are not sent; the log names each one without its links (AUTHSVC_MAILER_LOG_LINKS=true shows them on a development server, as does the console's development inbox)",
      );
    } else {
      // Loaded now, so the first mail does not wait for it; a failure shows at that mail.
      this.#smtp().catch(() => {});
    }
  }

  #smtp(): Promise<Transport> {
    const smtp = this.config.smtp;
    return this.#transport ??= import("nodemailer").then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: smtp.host,
        port: smtp.port,
        secure: smtp.port === 465,
        auth: smtp.user ? { user: smtp.user, pass: smtp.pass } : undefined,
        connectionTimeout: smtp.timeoutSec * 1000,
        greetingTimeout: smtp.timeoutSec * 1000,
        socketTimeout: smtp.timeoutSec * 1000,
      }) as Transport
    );
  }

  /** True when mails are only logged (no SMTP_HOST). */
  get logOnly(): boolean {
    return !this.config.smtp.host;
  }

  async #template(kind: MailKind, locale: string | null): Promise<string | null> {
    const url = (locale && this.config.mailer.localized[locale]?.templates[kind]) ||
      this.config.mailer.templates[kind];
    if (!url) return null;
    const now = this.clock.now().getTime();
    const hit = this.#templates.get(url);
    if (hit && now - hit.at < (hit.body === null ? TEMPLATE_RETRY_MS : TEMPLATE_TTL_MS)) {
      return hit.body;
    }
    let body: string | null = null;
    try {
      const res = await fetch(url, {
        signal: AbortSignal.timeout(this.config.mailer.templateTimeoutSec * 1000),
      });
      if (res.ok) body = await res.text();
      else {
        await res.body?.cancel();
        this.log.warn("mail template unavailable, using the default", {
          kind,
          status: res.status,
        });
      }
    } catch (e) {
      this.log.warn("mail template unavailable, using the default", {
        kind,
        error: e instanceof Error ? e.message : String(e),
      });
    }
    const why = body === null ? null : templateProblem(body);
    if (why) {
      // Refused when loaded: a template this server cannot render is never mailed raw.
      this.log.error("mail template refused, using the default", { kind, url, error: why });
      body = null;
    }
    // On failure keep serving the last good body, if any.
    if (body === null && hit?.body) body = hit.body;
    this.#templates.set(url, { body, at: now });
    return body;
  }

  /**
   * The locale of a mail of `kind` (mail/locale.ts): the user's
   * user_metadata.locale (`vars.Data`), then the request's Accept-Language,
   * among the locales with a subject or template of that kind; null: the default.
   */
  localeFor(kind: MailKind, vars: TemplateVars, acceptLanguage = requestAcceptLanguage()) {
    const localized = this.config.mailer.localized;
    const available = new Set(
      Object.keys(localized).filter((l) =>
        localized[l].subjects[kind] !== undefined || localized[l].templates[kind] !== undefined
      ),
    );
    return localeOf(vars.Data, acceptLanguage, available);
  }

  /** Renders the subject and both parts of a mail, in `locale`'s texts where it has them. */
  async render(
    kind: MailKind,
    vars: TemplateVars,
    locale: string | null = null,
  ): Promise<RenderedMail> {
    const custom = await this.#template(kind, locale);
    const subject = render(
      (locale && this.config.mailer.localized[locale]?.subjects[kind]) ||
        this.config.mailer.subjects[kind],
      vars,
      false,
    );
    if (custom !== null) {
      const html = render(custom, vars, true);
      return { subject, html, text: htmlToText(html) };
    }
    const d = DEFAULT_BODIES[kind];
    return { subject, html: render(d.html, vars, true), text: render(d.text, vars, false) };
  }

  /**
   * Sends one mail within the send limits. Throws 429 over a limit, 500
   * `email_send_failed` when the mail server refuses or cannot be reached.
   */
  async send(req: MailRequest): Promise<void> {
    const to = req.to.toLowerCase();
    await this.limits.send(
      {
        channel: "email",
        recipient: req.limitKey ?? to,
        kind: req.kind,
        intervalSec: req.intervalSec ?? 0,
      },
      async () => {
        const vars = typeof req.vars === "function" ? await req.vars() : req.vars;
        if (this.sendHook) return await this.sendHook(req, to, vars);
        const mail = await this.render(req.kind, vars, this.localeFor(req.kind, vars));
        if (this.logOnly) {
          this.log.info("mail not sent (SMTP_HOST unset)", {
            kind: req.kind,
            to,
            subject: mail.subject,
            ...(this.config.mailer.logLinks ? { links: linksIn(mail.text) } : {}),
          });
          this.inbox?.add(
            {
              kind: req.kind,
              to,
              subject: mail.subject,
              text: mail.text,
              code: vars.Token ?? null,
            },
            this.clock.now(),
          );
          return;
        }
        try {
          const transport = await this.#smtp();
          await transport.sendMail({
            from: { name: this.config.smtp.senderName, address: this.config.smtp.adminEmail },
            to,
            subject: mail.subject,
            text: mail.text,
            html: mail.html,
          });
        } catch (e) {
          const err = e as { code?: unknown; responseCode?: unknown };
          if (
            err.code === "EENVELOPE" && typeof err.responseCode === "number" &&
            err.responseCode >= 500 && err.responseCode < 600
          ) {
            // The mail server refused the address for good (e.g. 501 for an address over
            // RFC 5321's 254 octets): the client's input, answered as GoTrue answers an
            // address its mailer will not deliver to. Nothing was sent.
            this.log.warn("mail server refused the recipient", {
              kind: req.kind,
              to,
              error: e instanceof Error ? e.message : String(e),
            });
            throw new AuthError("email_address_invalid", `Email address "${to}" is invalid`);
          }
          this.log.error("mail send failed", {
            kind: req.kind,
            to,
            error: e instanceof Error ? e.message : String(e),
          });
          throw new AuthError("email_send_failed", `Error sending ${kindLabel(req.kind)} email`, {
            cause: e,
          });
        }
      },
    );
    this.events.emit("mail_sent", { kind: req.kind });
  }

  /**
   * Sends the notification mail of `kind` to the user when its switch is on.
   * Never throws; returns whether a mail went out.
   */
  async notify(
    kind: NotificationKind,
    user: Recipient,
    vars: TemplateVars = {},
  ): Promise<boolean> {
    if (!this.config.mailer.notifications[kind] || !user.email) return false;
    try {
      await this.send({
        kind: `${kind}_notification` as MailKind,
        to: user.email,
        vars: {
          SiteURL: this.config.siteUrl,
          Email: user.email,
          Data: user.raw_user_meta_data ?? {},
          ...vars,
        },
      });
      return true;
    } catch (e) {
      this.log.warn("notification mail not sent", {
        kind,
        error: e instanceof Error ? e.message : String(e),
      });
      return false;
    }
  }

  async close(): Promise<void> {
    (await this.#transport?.catch(() => null))?.close?.();
  }
}
