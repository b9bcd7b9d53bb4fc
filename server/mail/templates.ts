/**
 * Mail templates: the built-in default bodies (HTML and text) of every mail
 * kind, and the renderer of GoTrue-style variables (`{{ .ConfirmationURL }}`,
 * `{{ .Token }}`, `{{ .TokenHash }}`, `{{ .SiteURL }}`, `{{ .Email }}`,
 * `{{ .NewEmail }}`, `{{ .RedirectTo }}`, `{{ .Data.<key> }}`, ...). Values are
 * HTML-escaped in HTML bodies. Unknown variables render as "".
 */
import type { MailKind } from "../config/mod.ts";
import { execute, parseTemplate } from "./go_template.ts";

/** Template variables of a mail (docs/server/email.md; every value optional). */
export interface TemplateVars {
  ConfirmationURL?: string;
  Token?: string;
  TokenHash?: string;
  SiteURL?: string;
  Email?: string;
  NewEmail?: string;
  OldEmail?: string;
  RedirectTo?: string;
  Phone?: string;
  OldPhone?: string;
  Provider?: string;
  FactorType?: string;
  /** The user's user_metadata, as `{{ .Data.name }}`. */
  Data?: Record<string, unknown>;
}

/** A built-in body: HTML and text. */
interface DefaultBody {
  html: string;
  text: string;
}

const codeHtml = `<p>Alternatively, enter the code: <strong>{{ .Token }}</strong></p>`;
const codeText = `Alternatively, enter the code: {{ .Token }}`;

function linkMail(title: string, lead: string, action: string): DefaultBody {
  return {
    html:
      `<h2>${title}</h2>\n<p>${lead}</p>\n<p><a href="{{ .ConfirmationURL }}">${action}</a></p>\n` +
      codeHtml,
    text: `${title}\n\n${lead}\n\n${action}: {{ .ConfirmationURL }}\n\n${codeText}\n`,
  };
}

function note(title: string, body: string): DefaultBody {
  return { html: `<h2>${title}</h2>\n<p>${body}</p>`, text: `${title}\n\n${body}\n` };
}

/** The built-in bodies, close to GoTrue's, each with the one-time code beside the link. */
export const DEFAULT_BODIES: Record<MailKind, DefaultBody> = {
  confirmation: linkMail(
    "Confirm your signup",
    "Follow this link to confirm your user:",
    "Confirm your mail",
  ),
  invite: linkMail(
    "You have been invited",
    "You have been invited to create a user on {{ .SiteURL }}. Follow this link to accept the invite:",
    "Accept the invite",
  ),
  recovery: linkMail(
    "Reset Password",
    "Follow this link to reset the password for your user:",
    "Reset Password",
  ),
  magic_link: linkMail("Magic Link", "Follow this link to login:", "Log In"),
  email_change: linkMail(
    "Confirm Change of Email",
    "Follow this link to confirm the update of your email from {{ .Email }} to {{ .NewEmail }}:",
    "Change Email",
  ),
  reauthentication: {
    html: `<h2>Confirm reauthentication</h2>\n<p>Enter the code: <strong>{{ .Token }}</strong></p>`,
    text: `Confirm reauthentication\n\nEnter the code: {{ .Token }}\n`,
  },
  password_changed_notification: note(
    "Your password has been changed",
    "This is a confirmation that the password for your account {{ .Email }} has just been changed. If you did not make this change, please contact support.",
  ),
  email_changed_notification: note(
    "Your email address has been changed",
    "The email address for your account has been changed from {{ .OldEmail }} to {{ .Email }}. If you did not make this change, please contact support.",
  ),
  phone_changed_notification: note(
    "Your phone number has been changed",
    "The phone number for your account {{ .Email }} has been changed from {{ .OldPhone }} to {{ .Phone }}. If you did not make this change, please contact support.",
  ),
  identity_linked_notification: note(
    "A new identity has been linked",
    "A new identity ({{ .Provider }}) has been linked to your account {{ .Email }}. If you did not make this change, please contact support.",
  ),
  identity_unlinked_notification: note(
    "An identity has been unlinked",
    "An identity ({{ .Provider }}) has been unlinked from your account {{ .Email }}. If you did not make this change, please contact support.",
  ),
  mfa_factor_enrolled_notification: note(
    "A new MFA factor has been enrolled",
    "A new factor ({{ .FactorType }}) has been enrolled for your account {{ .Email }}. If you did not make this change, please contact support.",
  ),
  mfa_factor_unenrolled_notification: note(
    "An MFA factor has been unenrolled",
    "A factor ({{ .FactorType }}) has been unenrolled from your account {{ .Email }}. If you did not make this change, please contact support.",
  ),
};

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
}

const parsed = new Map<string, ReturnType<typeof parseTemplate>>();

/**
 * Renders a template: `{{ .Name }}` variables (escaped when `html`) and the
 * Go template forms of mail/go_template.ts. Throws TemplateError for anything
 * else; templates are checked when loaded (config/mail.ts, mailer.ts), so a mail
 * never carries raw template syntax.
 */
export function render(template: string, vars: TemplateVars, html: boolean): string {
  let nodes = parsed.get(template);
  if (!nodes) {
    nodes = parseTemplate(template);
    if (parsed.size > 200) parsed.clear();
    parsed.set(template, nodes);
  }
  return execute(nodes, vars, html ? escapeHtml : (s) => s);
}

function decodeEntities(s: string): string {
  return s.replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

/** A plain-text rendering of an HTML body (for the text part of custom templates). */
export function htmlToText(html: string): string {
  const text = html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, "")
    .replace(/<a\s[^>]*href\s*=\s*"([^"]*)"[^>]*>([\s\S]*?)<\/a>/gi, (_m, href, label) => {
      const l = String(label).replace(/<[^>]+>/g, "").trim();
      return l && l !== href ? `${l}: ${href}` : href;
    })
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|h[1-6]|li|tr)>/gi, "\n")
    .replace(/<[^>]+>/g, "");
  return decodeEntities(text).replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim() + "\n";
}

/** Closing brackets and the opening ones they pair with. */
const PAIRS: Record<string, string> = { ")": "(", "]": "[", "}": "{" };

/**
 * The links in a mail's text, without the punctuation of the sentence around
 * them: "Confirm: https://a.example/v?t=1." gives "https://a.example/v?t=1";
 * a closing bracket stays when the link opened it ("https://a.example/x_(y)").
 */
export function linksIn(text: string): string[] {
  return [...text.matchAll(/https?:\/\/[^\s<>"]+/g)].map(([url]) => {
    for (;;) {
      const last = url.at(-1)!;
      const open = PAIRS[last];
      const unpaired = open !== undefined && url.split(open).length <= url.split(last).length - 1;
      if (!/[.,;:!?'*]/.test(last) && !unpaired) return url;
      url = url.slice(0, -1);
    }
  });
}
