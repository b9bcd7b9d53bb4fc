/**
 * The development inbox: on a server whose console is enabled and which has
 * no SMTP_HOST (mails are only logged), the mails that would have been sent
 * are kept in memory, newest first, so a developer can follow every mail flow
 * from the console (docs/console.md). Never created when SMTP_HOST is set.
 */
import { linksIn } from "../mail/templates.ts";

/** One mail that was not sent. */
export interface InboxMail {
  id: string;
  at: string;
  kind: string;
  to: string;
  subject: string;
  text: string;
  /** The links in the mail's text part. */
  links: string[];
  /** The one-time code the mail carries, when it carries one. */
  code: string | null;
}

/** The last `max` mails, newest first. */
export class DevInbox {
  #mails: InboxMail[] = [];

  constructor(readonly max = 200) {}

  add(m: Omit<InboxMail, "id" | "links" | "at">, at: Date): void {
    const links = linksIn(m.text);
    this.#mails.unshift({ ...m, id: crypto.randomUUID(), at: at.toISOString(), links });
    if (this.#mails.length > this.max) this.#mails.length = this.max;
  }

  list(): InboxMail[] {
    return [...this.#mails];
  }
}
