/** Multi-factor authentication: which factors may be enrolled, how many, and their challenges. */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const MFA_SECTION: SectionDoc = {
  title: "Multi-factor authentication",
  about: "Factors a user may enrol and their challenges ([server/mfa.md](server/mfa.md)).",
};

/** The MFA settings. */
export interface MfaConfig {
  maxEnrolledFactors: number;
  challengeExpiry: number;
  maxAttempts: number;
  totpEnabled: boolean;
  phoneEnabled: boolean;
}

export function readMfa(r: ConfigReader): MfaConfig {
  return {
    maxEnrolledFactors: r.int("MFA_MAX_ENROLLED_FACTORS", {
      default: 10,
      min: 1,
      doc: "factors per user",
    }),
    challengeExpiry: r.seconds("MFA_CHALLENGE_EXPIRY_DURATION", {
      default: 300,
      doc: "challenge validity",
    }),
    maxAttempts: r.int("MFA_MAX_ATTEMPTS", {
      default: 5,
      min: 1,
      doc: "wrong codes per challenge",
    }),
    totpEnabled: r.bool("MFA_TOTP_ENROLL_ENABLED", { default: true, doc: "TOTP factors" }),
    phoneEnabled: r.bool("MFA_PHONE_ENROLL_ENABLED", { default: false, doc: "phone factors" }),
  };
}
