/**
 * In-process events, so cross-cutting concerns (metrics, tracing) observe the
 * domain without the domain knowing about them. Emitted names:
 *
 * - `audit` {action, actor_id, log_type, traits}: every audit entry
 * - `signup` {method}: a user was created (email, phone, anonymous, invite, oauth provider)
 * - `signin` {method}: a session was issued (password, otp, magiclink, oauth, ...)
 * - `token_refresh` {}: a refresh_token grant succeeded
 * - `mail_sent` {kind} / `sms_sent` {provider}: a message actually went out
 */
export type EventListener = (attrs: Record<string, unknown>) => void;

/** A tiny synchronous event bus; a throwing listener never breaks the request. */
export class Events {
  #listeners = new Map<string, EventListener[]>();

  on(name: string, fn: EventListener): void {
    const l = this.#listeners.get(name) ?? [];
    l.push(fn);
    this.#listeners.set(name, l);
  }

  emit(name: string, attrs: Record<string, unknown> = {}): void {
    for (const fn of this.#listeners.get(name) ?? []) {
      try {
        fn(attrs);
      } catch { /* observers must not break requests */ }
    }
  }
}
