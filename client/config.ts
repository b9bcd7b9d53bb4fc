/**
 * Library-wide configuration (the Ruby gem's `OAuth2.configure`): warnings, the redaction label and the
 * keys whose values never reach a log line, an inspected object or an error.
 * @module
 */

/**
 * Library configuration, changed with {@linkcode configure}.
 *
 * @example
 * ```ts
 * import { config, type OAuth2Config } from "@authsvc/oauth2";
 * const current: Readonly<OAuth2Config> = config;
 * console.log(current.filteredLabel); // "[FILTERED]"
 * ```
 */
export interface OAuth2Config {
  /** Suppress the warning when a token response holds several token-like fields. Default true. */
  silenceExtraTokensWarning: boolean;
  /** Suppress the warning when a token response holds no token field. Default true. */
  silenceNoTokensWarning: boolean;
  /** Placeholder shown instead of a sensitive value. Default `"[FILTERED]"`. */
  filteredLabel: string;
  /** Key names (case-insensitive) whose values are redacted in debug output, inspection and errors. */
  filteredDebugKeys: string[];
}

const current: OAuth2Config = {
  silenceExtraTokensWarning: true,
  silenceNoTokensWarning: true,
  filteredLabel: "[FILTERED]",
  // The keys redacted by default; callers may append more with `configure`.
  filteredDebugKeys: [
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "client_secret",
    "client_assertion",
    "assertion",
    "password",
    "code",
    "code_verifier",
    "device_code",
    "auth_req_id",
    "subject_token",
    "actor_token",
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
  ],
};

/**
 * The current configuration (read-only view; change it with {@linkcode configure}).
 *
 * @example
 * ```ts
 * import { config } from "@authsvc/oauth2";
 * console.log(config.filteredDebugKeys.includes("client_secret")); // true
 * ```
 */
export const config: Readonly<OAuth2Config> = current;

/**
 * Changes the library configuration.
 *
 * @param fn receives the mutable configuration
 * @throws {TypeError} when `fn` is not a function or leaves a setting of the wrong type
 *
 * @example
 * ```ts
 * import { configure } from "@authsvc/oauth2";
 * configure((c) => {
 *   c.filteredDebugKeys.push("x_api_key");
 *   c.silenceExtraTokensWarning = false;
 * });
 * ```
 */
export function configure(fn: (c: OAuth2Config) => void): void {
  if (typeof fn !== "function") throw mistyped("configure", "fn", "a function", fn);
  const draft: OAuth2Config = { ...current, filteredDebugKeys: [...current.filteredDebugKeys] };
  fn(draft);
  for (const key of ["silenceExtraTokensWarning", "silenceNoTokensWarning"] as const) {
    if (typeof draft[key] !== "boolean") throw mistyped("configure", key, "a boolean", draft[key]);
  }
  if (typeof draft.filteredLabel !== "string") {
    throw mistyped("configure", "filteredLabel", "a string", draft.filteredLabel);
  }
  const keys = draft.filteredDebugKeys;
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) {
    throw mistyped("configure", "filteredDebugKeys", "an array of strings", keys);
  }
  Object.assign(current, draft);
}

/** A short description of a value's type for TypeError messages. */
export function typeName(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

/**
 * The library's TypeError for an argument or option of the wrong type:
 * `<where>: "<name>" must be <expected>, got <type>`.
 */
export function mistyped(where: string, name: string, expected: string, value: unknown): TypeError {
  return new TypeError(`${where}: "${name}" must be ${expected}, got ${typeName(value)}`);
}

/** Whether `value` is a record (an object that is not an array). */
export function isRecord(value: unknown): boolean {
  return !!value && typeof value === "object" && !Array.isArray(value);
}

/** Whether `OAUTH_DEBUG=true` is set, without ever prompting for or failing on permissions. */
export function debugFromEnvironment(): boolean {
  try {
    const deno = (globalThis as { Deno?: DenoEnvLike }).Deno;
    if (deno?.env) {
      const status = deno.permissions?.querySync?.({ name: "env", variable: "OAUTH_DEBUG" });
      if (status && status.state !== "granted") return false;
      return deno.env.get("OAUTH_DEBUG") === "true";
    }
    return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env
      ?.OAUTH_DEBUG === "true";
  } catch {
    return false;
  }
}

interface DenoEnvLike {
  env: { get(name: string): string | undefined };
  permissions?: {
    querySync?(desc: { name: "env"; variable: string }): { state: string };
  };
}
