/** Helpers of the operations tests: fake captcha providers and small request helpers. */
import { dropNamespace, freshNamespace, testDatabaseUrl } from "../../helpers/server.ts";
import { type Db, openDb } from "../../../server/db/db.ts";

export type { Json } from "../../helpers/http.ts";

/** One siteverify call as the fake received it. */
export interface SiteverifyCall {
  path: string;
  contentType: string;
  form: Record<string, string>;
}

/** A fake captcha provider: answers success for `goodToken`, checks the documented request. */
export interface FakeCaptcha {
  url: string;
  calls: SiteverifyCall[];
  /** Problems with the requests it received (should stay empty). */
  problems: string[];
  close(): Promise<void>;
}

/**
 * A local stand-in for hCaptcha's or Turnstile's siteverify: it requires a
 * POST of an `application/x-www-form-urlencoded` body with `secret` (must be
 * `secret`) and `response`, optional `remoteip`, at the provider's documented
 * path, and answers `{"success": ..., "error-codes": [...]}` like the real one.
 * `delayMs` makes it slow (for the timeout test).
 */
export function startFakeCaptcha(
  provider: "hcaptcha" | "turnstile",
  opts: { secret: string; goodToken: string; delayMs?: number },
): FakeCaptcha {
  const path = provider === "hcaptcha" ? "/siteverify" : "/turnstile/v0/siteverify";
  const calls: SiteverifyCall[] = [];
  const problems: string[] = [];
  const ac = new AbortController();
  const pending = new Set<ReturnType<typeof setTimeout>>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    async (req) => {
      const u = new URL(req.url);
      const contentType = req.headers.get("content-type") ?? "";
      const text = await req.text();
      const form = Object.fromEntries(new URLSearchParams(text));
      calls.push({ path: u.pathname, contentType, form });
      if (req.method !== "POST") problems.push(`method ${req.method}`);
      if (u.pathname !== path) problems.push(`path ${u.pathname}`);
      if (!contentType.startsWith("application/x-www-form-urlencoded")) {
        problems.push(`content-type ${contentType}`);
      }
      for (const k of Object.keys(form)) {
        if (!["secret", "response", "remoteip", "sitekey", "idempotency_key"].includes(k)) {
          problems.push(`unknown field ${k}`);
        }
      }
      if (opts.delayMs) {
        await new Promise((r) => {
          const id = setTimeout(r, opts.delayMs);
          pending.add(id);
        });
      }
      if (form.secret !== opts.secret) {
        return Response.json({ success: false, "error-codes": ["invalid-input-secret"] });
      }
      if (!form.response) {
        return Response.json({ success: false, "error-codes": ["missing-input-response"] });
      }
      if (form.response !== opts.goodToken) {
        return Response.json({ success: false, "error-codes": ["invalid-input-response"] });
      }
      return Response.json({
        success: true,
        challenge_ts: new Date().toISOString(),
        hostname: "localhost",
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}${path}`,
    calls,
    problems,
    async close() {
      for (const id of pending) clearTimeout(id);
      ac.abort();
      await server.finished;
    },
  };
}

/** A clock tests can move. */
export class TestClock {
  constructor(public ms = Date.UTC(2026, 0, 1, 12, 0, 0)) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(sec: number): void {
    this.ms += sec * 1000;
  }
}

/**
 * A database of its own for a test that builds the app itself (createApp):
 * PostgreSQL in a fresh namespace when DATABASE_URL is set, else an in-memory
 * PGlite. `close()` drops the namespace and closes it.
 */
export async function scratchDb(): Promise<{ db: Db; close(): Promise<void> }> {
  const url = testDatabaseUrl();
  const prefix = url ? `${freshNamespace()}_` : "";
  const db = await openDb({ url, dataDir: "memory://", maxPoolSize: 2, prefix });
  return {
    db,
    async close() {
      if (url) await dropNamespace(db, prefix).catch(() => {});
      await db.close();
    },
  };
}
