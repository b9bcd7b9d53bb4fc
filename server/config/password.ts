/** Passwords: the strength rules, the leaked-password check and the hasher's priority. */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const PASSWORD_SECTION: SectionDoc = {
  title: "Passwords",
  about:
    "What a new password must satisfy, the Have I Been Pwned check and the bcrypt workers ([passwords.md](passwords.md)).",
};

/** The password settings. */
export interface PasswordConfig {
  minLength: number;
  /** Character sets; a password needs one character of each. */
  requiredCharacters: string[];
  /** Leaked-password check against Have I Been Pwned's range API (auth/pwned.ts). */
  hibp: { enabled: boolean; failClosed: boolean; userAgent: string; apiUrl: string };
  /** Nice value of the bcrypt worker threads on Linux (auth/bcrypt_worker.ts); 0: unchanged. */
  hasherNice: number;
}

export function readPassword(r: ConfigReader): PasswordConfig {
  return {
    minLength: r.int("PASSWORD_MIN_LENGTH", {
      default: 6,
      min: 1,
      max: 72,
      doc: "minimum password length",
    }),
    requiredCharacters: splitCharacterSets(
      r.string("PASSWORD_REQUIRED_CHARACTERS", {
        doc: "character sets split by : (\\: is a literal colon)",
      }),
    ),
    hibp: {
      enabled: r.bool("PASSWORD_HIBP_ENABLED", {
        doc: "refuse passwords found in Have I Been Pwned (weak_password, reason pwned)",
      }),
      failClosed: r.bool("PASSWORD_HIBP_FAIL_CLOSED", {
        doc: "when the check cannot be made, refuse the request (500) instead of allowing it",
      }),
      userAgent: r.string("PASSWORD_HIBP_USER_AGENT", {
        default: "https://github.com/supabase/gotrue",
        doc: "User-Agent of the range API requests",
      }),
      apiUrl: r.url("PASSWORD_HIBP_API_URL", {
        default: "https://api.pwnedpasswords.com",
        doc: "base URL of the range API (GET {url}/range/{5 hex}); tests and mirrors",
      }),
    },
    hasherNice: r.int("PASSWORD_HASHER_NICE", {
      default: 10,
      min: 0,
      max: 19,
      doc: "nice value of the bcrypt worker threads (Linux; 0: as the process; docs/passwords.md)",
    }),
  };
}

/** PASSWORD_REQUIRED_CHARACTERS: sets split by `:`, where `\:` is a literal colon. */
function splitCharacterSets(text: string): string[] {
  const sets: string[] = [];
  let cur = "";
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\" && text[i + 1] === ":") {
      cur += ":";
      i++;
    } else if (text[i] === ":") {
      if (cur) sets.push(cur);
      cur = "";
    } else cur += text[i];
  }
  if (cur) sets.push(cur);
  return sets;
}
