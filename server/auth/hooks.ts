/**
 * Auth hooks, as GoTrue defines them: at a few points the server hands a JSON
 * payload to code of the operator's and acts on the answer.
 *
 * - `custom_access_token`: `{user_id, claims, authentication_method}` →
 *   `{claims}`, signed instead of ours (the required claims must stay);
 * - `password_verification_attempt`: `{user_id, valid}` →
 *   `{decision: "continue" | "reject", message, should_logout_user}`;
 * - `mfa_verification_attempt`: `{user_id, factor_id, factor_type, valid}` →
 *   `{decision, message}`;
 * - `send_sms`: `{user, sms: {otp, phone}}`, the hook sends it;
 * - `send_email`: `{user, email_data: {token, token_hash, redirect_to,
 *   email_action_type, site_url, token_new, token_hash_new}}`, the hook sends it;
 * - `before_user_created`: `{user}`, the user about to be created (not by an
 *   admin); an error answer refuses the sign-up;
 * - `after_user_created`: `{user}`, once the user is stored.
 *
 * Every payload also carries `metadata: {uuid, time, name, ip_address}`.
 *
 * A hook is a PostgreSQL function (`pg-functions://<db>/<schema>/<fn>`,
 * called as `SELECT schema.fn($1::jsonb)` under a statement_timeout) or an
 * HTTP(S) endpoint, POSTed to with Standard Webhooks signatures
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64
 * HMAC-SHA256 of "id.timestamp.body">`). An answer `{"error": {"http_code",
 * "message"}}` fails the request with that status and message. A hook that
 * fails otherwise answers GoTrue's messages ("Error running hook URI: <uri>",
 * "Failed to reach hook after maximum retries"); what went wrong underneath
 * (PostgreSQL's text, hosts, addresses) reaches the log and the operator's
 * `hook_failed` audit entry (onProblem), never the client.
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Db, Queryable } from "../db/db.ts";
import { HookFunctionStore } from "../store/hook_functions.ts";
import { describeError, type Logger } from "../observe/log.ts";
import type { HookName, HookSettings } from "../config/hooks.ts";

import {
  answerOf,
  contentTypeOf,
  errorOf,
  hookFailed,
  type HookOutput,
  HookProblem,
  type HookProblemReport,
  jsonKind,
  problemOf,
  readLimited,
  shownUri,
} from "./hook_answers.ts";

export { HOOK_NAMES, type HookName } from "../config/hooks.ts";
export type { HookOutput } from "./hook_answers.ts";

/** GoTrue's names of the hooks in `metadata.name`. */
export const METADATA_NAMES: Record<HookName, string> = {
  custom_access_token: "customize-access-token",
  send_email: "send-email",
  send_sms: "send-sms",
  password_verification_attempt: "password-verification",
  mfa_verification_attempt: "mfa-verification",
  before_user_created: "before-user-created",
  after_user_created: "after-user-created",
};

const HTTP_ATTEMPTS = 3;

function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/**
 * The `webhook-signature` value for a message: one `v1,<signature>` per
 * secret, space-separated as the Standard Webhooks specification has it.
 */
export async function webhookSignature(
  secrets: string[],
  id: string,
  timestamp: number,
  body: string,
): Promise<string> {
  const out: string[] = [];
  for (const secret of secrets) {
    const raw = Uint8Array.from(atob(secret.replace(/^v1,whsec_/, "")), (c) => c.charCodeAt(0));
    const key = await crypto.subtle.importKey(
      "raw",
      raw,
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const sig = await crypto.subtle.sign(
      "HMAC",
      key,
      new TextEncoder().encode(`${id}.${timestamp}.${body}`),
    );
    out.push(`v1,${base64(new Uint8Array(sig))}`);
  }
  return out.join(" ");
}

/** Calls the configured hooks. */
export class Hooks {
  readonly #functions: HookFunctionStore;
  /**
   * Told of every hook that failed or answered nonsense (not of a hook's own
   * `{"error"}` answer, which is a decision); hooks_install.ts writes the
   * audit entry. Not awaited: the request may hold a transaction it would wait on.
   */
  onProblem: ((r: HookProblemReport) => Promise<void>) | null = null;

  constructor(
    readonly config: Config,
    readonly db: Db,
    readonly log: Logger,
    readonly fetchFn: typeof fetch = fetch,
  ) {
    this.#functions = new HookFunctionStore(db);
  }

  /** Whether the hook is enabled. */
  enabled(name: HookName): boolean {
    return this.config.hooks.points[name].enabled;
  }

  /**
   * Calls a hook with `payload` (metadata added) and returns its answer.
   *
   * @throws {AuthError} the hook's own error; 422 hook_timeout; 500 when it
   *   failed or answered something unusable
   */
  async invoke(
    name: HookName,
    payload: Record<string, unknown>,
    ip = "",
    /** The caller's open transaction: a pg-functions hook runs in it, as GoTrue's does. */
    tx?: Queryable,
  ): Promise<HookOutput> {
    const point = this.config.hooks.points[name];
    const input = {
      metadata: {
        uuid: crypto.randomUUID(),
        time: new Date().toISOString(),
        name: METADATA_NAMES[name],
        ip_address: ip,
      },
      ...payload,
    };
    const started = performance.now();
    let out: HookOutput;
    try {
      out = point.uri.toLowerCase().startsWith("pg-functions:")
        ? await this.#pg(point, input, tx)
        : await this.#http(point, input);
    } catch (e) {
      // The cause (PostgreSQL's text, a host or address that did not answer) is for this
      // log line and the operator's audit entry only; the caller's answer carries GoTrue's message.
      const ms = Math.round(performance.now() - started);
      this.log.warn("auth hook failed", {
        hook: name,
        uri: point.uri,
        ms,
        error: describeError(e),
      });
      this.report(name, problemOf(e), ms);
      throw e;
    }
    const err = errorOf(out);
    if (err) throw err;
    return out;
  }

  /** Tells onProblem (never awaited, never failing the request) that `name` misbehaved. */
  report(name: HookName, problem: string, ms = 0): void {
    if (!this.onProblem) return;
    const r = { hook: name, uri: shownUri(this.config.hooks.points[name].uri), problem, ms };
    this.onProblem(r).catch((e) =>
      this.log.warn("auth hook problem not recorded", { hook: name, error: describeError(e) })
    );
  }

  async #pg(point: HookSettings, input: unknown, outer?: Queryable): Promise<HookOutput> {
    const [, schema, fn] = new URL(point.uri).pathname.split("/");
    const ms = Math.max(1, Math.round(this.config.hooks.pgTimeoutSec * 1000));
    try {
      const result = await this.#functions.call(schema, fn, input, ms, outer);
      const out = typeof result === "string" ? JSON.parse(result) : result;
      if (out === null || out === undefined) return null;
      if (typeof out !== "object" || Array.isArray(out)) {
        throw hookFailed(
          "Hook function returned something other than a JSON object",
          `the function returned ${jsonKind(out)}, expected a JSON object`,
        );
      }
      return out as Record<string, unknown>;
    } catch (e) {
      if (e instanceof AuthError) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      if (/statement timeout/i.test(msg)) {
        throw new AuthError(
          "hook_timeout",
          `Failed to reach hook within maximum time of ${this.config.hooks.pgTimeoutSec} seconds`,
          {
            cause: new HookProblem(
              `the function did not return within ${this.config.hooks.pgTimeoutSec} s`,
              { cause: e },
            ),
          },
        );
      }
      // GoTrue's answer (internal/hooks/v0hooks/manager.go); what PostgreSQL said stays in the
      // log and the operator's audit entry.
      throw new AuthError("unexpected_failure", `Error running hook URI: ${point.uri}`, {
        cause: new HookProblem(`the function failed: ${msg}`, { cause: e }),
      });
    }
  }

  async #http(point: HookSettings, input: unknown): Promise<HookOutput> {
    const body = JSON.stringify(input);
    const limitSec = this.config.hooks.httpTimeoutSec;
    const signal = AbortSignal.timeout(limitSec * 1000);
    const timeout = () =>
      new AuthError(
        "hook_timeout",
        `Failed to reach hook within maximum time of ${limitSec} seconds`,
        { cause: new HookProblem(`no answer within ${limitSec} s (AUTHSVC_HOOK_HTTP_TIMEOUT)`) },
      );
    for (let attempt = 1; attempt <= HTTP_ATTEMPTS; attempt++) {
      const id = crypto.randomUUID();
      const ts = Math.floor(Date.now() / 1000);
      let res: Response;
      try {
        res = await this.fetchFn(point.uri, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "webhook-id": id,
            "webhook-timestamp": String(ts),
            "webhook-signature": await webhookSignature(point.secrets, id, ts, body),
          },
          body,
          signal,
          redirect: "manual",
        });
      } catch (e) {
        if (signal.aborted) throw timeout();
        if (attempt < HTTP_ATTEMPTS) continue;
        // GoTrue's answer (internal/hooks/hookshttp); the host and address that did not
        // answer stay in the log.
        throw new AuthError(
          "hook_timeout_after_retry",
          "Failed to reach hook after maximum retries",
          {
            cause: new HookProblem(
              `could not be reached in ${HTTP_ATTEMPTS} attempts: ${describeError(e)}`,
              { cause: e },
            ),
          },
        );
      }
      if (res.status === 204) {
        await res.body?.cancel();
        return null;
      }
      if (res.status === 200 || res.status === 202) {
        return await this.#read(res);
      }
      await res.body?.cancel();
      if ((res.status === 429 || res.status === 503) && res.headers.get("retry-after")) {
        continue;
      }
      const problem = `answered HTTP ${res.status}, expected 200, 202 or 204` +
        (res.status === 401 ? " (does it verify the signature with another secret?)" : "");
      switch (res.status) {
        case 400:
          throw hookFailed("Invalid payload sent to hook", problem);
        case 401:
          throw hookFailed("Hook requires authorization token", problem);
        case 429:
        case 503:
          throw hookFailed("Service currently unavailable due to hook", problem);
        default:
          throw hookFailed(`Unexpected status code returned from hook: ${res.status}`, problem);
      }
    }
    throw hookFailed(
      "Service currently unavailable due to hook",
      `answered 429 or 503 with Retry-After on all ${HTTP_ATTEMPTS} attempts`,
    );
  }

  async #read(res: Response): Promise<HookOutput> {
    const type = res.headers.get("content-type");
    // A wrong type is refused before the body is read.
    if (contentTypeOf(type) !== "application/json") {
      await res.body?.cancel();
      return answerOf(type, { text: "", over: false });
    }
    return answerOf(type, await readLimited(res));
  }
}
