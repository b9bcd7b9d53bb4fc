/**
 * The settings of GoTrue's auth hooks, under our prefix:
 * `AUTHSVC_HOOK_<NAME>_ENABLED`, `_URI` and `_SECRETS` for each hook, plus
 * the timeouts. Checked when the configuration is read: an enabled hook needs
 * a URI that is `pg-functions://<db>/<schema>/<function>`, `https://...`, or
 * `http://` on the local host, and an HTTP hook needs at least one secret in
 * the Standard Webhooks form `v1,whsec_<base64>` (several split by `|`).
 */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const HOOKS_SECTION: SectionDoc = {
  title: "Auth hooks",
  about:
    "PostgreSQL functions or HTTPS endpoints called at points of the flows ([hooks.md](hooks.md)).",
};

/** The hooks, as the settings name them. */
export const HOOK_NAMES = [
  "custom_access_token",
  "send_email",
  "send_sms",
  "password_verification_attempt",
  "mfa_verification_attempt",
  "before_user_created",
  "after_user_created",
] as const;
export type HookName = typeof HOOK_NAMES[number];

/** One hook's settings. */
export interface HookSettings {
  enabled: boolean;
  uri: string;
  /** Standard Webhooks secrets, `v1,whsec_...` (HTTP hooks only). */
  secrets: string[];
}

/** All hooks' settings. */
export interface HooksConfig {
  /** How long an HTTP hook may take, retries included (GoTrue: 5 s). */
  httpTimeoutSec: number;
  /** statement_timeout of a pg-functions hook (GoTrue: 2 s). */
  pgTimeoutSec: number;
  points: Record<HookName, HookSettings>;
}

const PG_NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,62}$/;
const SYMMETRIC_SECRET = /^v1,whsec_[A-Za-z0-9+/=]{32,88}$/;
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "host.docker.internal"]);

/** What is wrong with a hook's URI and secrets, or null. */
export function hookProblem(h: HookSettings): string | null {
  if (!h.uri) return h.enabled ? "required when the hook is enabled" : null;
  let u: URL;
  try {
    u = new URL(h.uri);
  } catch {
    return `expected a pg-functions:// or https:// URI, got "${h.uri}"`;
  }
  const scheme = u.protocol.toLowerCase();
  if (scheme === "pg-functions:") {
    const parts = u.pathname.split("/").filter(Boolean);
    if (parts.length !== 2) {
      return `expected pg-functions://<database>/<schema>/<function>, got "${h.uri}"`;
    }
    if (!parts.every((p) => PG_NAME.test(p))) {
      return `schema and function must be plain PostgreSQL names, got "${h.uri}"`;
    }
    return null;
  }
  if (scheme === "http:" && !LOCAL_HOSTS.has(u.hostname)) {
    return "http:// is accepted only for localhost, 127.0.0.1 and ::1; use https://";
  }
  if (scheme !== "http:" && scheme !== "https:") {
    return `only pg-functions:// and https:// hooks are supported, got "${scheme}"`;
  }
  if (h.enabled && h.secrets.length === 0) {
    return "an HTTP hook needs AUTHSVC_HOOK_..._SECRETS (v1,whsec_<base64>)";
  }
  for (const s of h.secrets) {
    if (s.startsWith("v1a,")) return "asymmetric (v1a) webhook secrets are not supported";
    if (!SYMMETRIC_SECRET.test(s)) {
      return "each secret must look like v1,whsec_<base64 of 24 to 64 bytes>";
    }
  }
  return null;
}

/** Reads every hook's settings; problems name the variable. */
export function readHookSettings(r: ConfigReader): HooksConfig {
  const points = {} as Record<HookName, HookSettings>;
  for (const name of HOOK_NAMES) {
    const X = `HOOK_${name.toUpperCase()}`;
    const label = name.replaceAll("_", " ");
    const h: HookSettings = {
      enabled: r.bool(`${X}_ENABLED`, { doc: `call the ${label} hook` }),
      uri: r.string(`${X}_URI`, {
        doc: `${label} hook: pg-functions://postgres/<schema>/<function> or https://...`,
      }),
      secrets: r.string(`${X}_SECRETS`, {
        doc: `${label} hook: Standard Webhooks secrets v1,whsec_<base64>, several split by |`,
      }).split("|").map((s) => s.trim()).filter(Boolean),
    };
    const why = hookProblem(h);
    if (why) r.problem(`${r.name(/secret/i.test(why) ? `${X}_SECRETS` : `${X}_URI`)}: ${why}`);
    points[name] = h;
  }
  return {
    httpTimeoutSec: r.seconds("HOOK_HTTP_TIMEOUT", {
      default: 5,
      doc: "how long an HTTP hook may take, retries included: 422 hook_timeout after it",
    }),
    pgTimeoutSec: r.seconds("HOOK_PG_TIMEOUT", {
      default: 2,
      doc: "statement_timeout of a pg-functions hook",
    }),
    points,
  };
}
