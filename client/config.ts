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

/** The keys redacted by default; callers may append more with {@linkcode configure}. */
export const DEFAULT_FILTERED_DEBUG_KEYS: readonly string[] = Object.freeze([
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
]);

const current: OAuth2Config = {
  silenceExtraTokensWarning: true,
  silenceNoTokensWarning: true,
  filteredLabel: "[FILTERED]",
  filteredDebugKeys: [...DEFAULT_FILTERED_DEBUG_KEYS],
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
  if (typeof fn !== "function") {
    throw new TypeError(`configure: "fn" must be a function, got ${typeName(fn)}`);
  }
  const draft: OAuth2Config = { ...current, filteredDebugKeys: [...current.filteredDebugKeys] };
  fn(draft);
  for (const key of ["silenceExtraTokensWarning", "silenceNoTokensWarning"] as const) {
    if (typeof draft[key] !== "boolean") {
      throw new TypeError(`configure: "${key}" must be a boolean, got ${typeName(draft[key])}`);
    }
  }
  if (typeof draft.filteredLabel !== "string") {
    throw new TypeError(`configure: "filteredLabel" must be a string`);
  }
  if (
    !Array.isArray(draft.filteredDebugKeys) ||
    draft.filteredDebugKeys.some((k) => typeof k !== "string")
  ) {
    throw new TypeError(`configure: "filteredDebugKeys" must be an array of strings`);
  }
  Object.assign(current, draft);
}

/** A short description of a value's type for TypeError messages. */
export function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
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
    const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } })
      .process;
    return proc?.env?.OAUTH_DEBUG === "true";
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
