/**
 * Rate limits: mail and SMS sends, counted in PostgreSQL across processes,
 * and per-IP request limits of the busy endpoints (security/rate_limit.ts).
 */
import type { ConfigReader, Rate, SectionDoc } from "./reader.ts";

export const RATE_LIMIT_SECTION: SectionDoc = {
  title: "Rate limits",
  about:
    "Mail and SMS sends (counted in the database, so across processes) and requests per IP ([operations.md](operations.md#request-rate-limits)).",
};

/** The rate limits. */
export interface RateLimitConfig {
  header: string;
  emailSent: Rate;
  smsSent: Rate;
  tokenRefresh: Rate;
  verify: Rate;
  otp: Rate;
  signup: Rate;
  anonymousUsers: Rate;
}

export function readRateLimits(r: ConfigReader): RateLimitConfig {
  return {
    header: r.string("RATE_LIMIT_HEADER", {
      doc: "header whose value keys the per-IP request limits",
    }),
    emailSent: r.rate("RATE_LIMIT_EMAIL_SENT", { count: 30, windowSec: 3600 }, {
      doc: "e-mails per hour",
    }),
    smsSent: r.rate("RATE_LIMIT_SMS_SENT", { count: 30, windowSec: 3600 }, {
      doc: "SMS per hour",
    }),
    tokenRefresh: r.rate("RATE_LIMIT_TOKEN_REFRESH", { count: 150, windowSec: 300 }, {
      doc: "/token requests per IP",
    }),
    verify: r.rate("RATE_LIMIT_VERIFY", { count: 30, windowSec: 300 }, {
      doc: "/verify requests per IP",
    }),
    otp: r.rate("RATE_LIMIT_OTP", { count: 30, windowSec: 300 }, { doc: "/otp requests per IP" }),
    signup: r.rate("RATE_LIMIT_SIGNUP", { count: 30, windowSec: 300 }, {
      doc: "/signup requests per IP",
    }),
    anonymousUsers: r.rate("RATE_LIMIT_ANONYMOUS_USERS", { count: 30, windowSec: 3600 }, {
      doc: "anonymous sign-ins per IP",
    }),
  };
}
