/** Session limits (auth/session_limits.ts): a time box, an inactivity timeout, one session per user. */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const SESSIONS_SECTION: SectionDoc = {
  title: "Sessions",
  about:
    "How long a session may be refreshed and how many a user may keep ([sessions.md](sessions.md)).",
};

/** The session limits; 0 seconds: no limit. */
export interface SessionsConfig {
  timeboxSec: number;
  inactivityTimeoutSec: number;
  singlePerUser: boolean;
}

export function readSessions(r: ConfigReader): SessionsConfig {
  return {
    timeboxSec: r.seconds("SESSIONS_TIMEBOX", {
      default: 0,
      doc: "a session cannot be refreshed this long after its sign-in (e.g. 24h); 0: no limit",
    }),
    inactivityTimeoutSec: r.seconds("SESSIONS_INACTIVITY_TIMEOUT", {
      default: 0,
      doc: "a session not refreshed for this long cannot be refreshed any more; 0: no limit",
    }),
    singlePerUser: r.bool("SESSIONS_SINGLE_PER_USER", {
      doc:
        "only a user's most recently active session can be refreshed; a new sign-in ends the others",
    }),
  };
}
