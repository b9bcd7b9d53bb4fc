/**
 * Security switches: refresh-token rotation, what a password change needs,
 * identity linking, admin confirmation, the trusted client-IP header and the
 * captcha.
 */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const SECURITY_SECTION: SectionDoc = {
  title: "Security",
  about:
    "Refresh-token rotation, what a password change needs, identity linking, the client IP behind a proxy and the captcha ([security.md](security.md), [sessions.md](sessions.md)).",
};

/** The security settings. */
export interface SecurityConfig {
  refreshTokenRotationEnabled: boolean;
  refreshTokenReuseInterval: number;
  refreshTokenStamped: boolean;
  updatePasswordRequireReauthentication: boolean;
  updatePasswordRequireCurrentPassword: boolean;
  manualLinkingEnabled: boolean;
  /**
   * An admin's `email_confirm` / `phone_confirm` on an account nobody has
   * proven is a first confirmation like any other (auth/confirm.ts): only a
   * password sent with it stays, and the account's other identities,
   * factors and sessions end. Off (GoTrue's behaviour): the admin vouches
   * for the address and the account stays as it was signed up.
   */
  adminConfirmResetsUnproven: boolean;
  /**
   * Identity linking only in the PKCE flow (the link made at the code
   * exchange); the implicit flow's link is a 400 (docs/security.md).
   */
  linkIdentityRequirePkce: boolean;
  /**
   * The proxy header the client IP is read from (security/client_ip.ts), lower case; "" when
   * SECURITY_SB_FORWARDED_FOR_ENABLED is off.
   */
  forwardedForHeader: string;
  captcha: {
    enabled: boolean;
    provider: "hcaptcha" | "turnstile";
    secret: string;
    timeoutSec: number;
    /** Base URL override of the siteverify endpoint (tests). */
    verifyUrl: string;
  };
}

/** `from` names, for each of our variables set under a GoTrue name, that name (gotrue_aliases.ts). */
export function readSecurity(r: ConfigReader, from: Record<string, string>): SecurityConfig {
  return {
    refreshTokenRotationEnabled: r.bool("SECURITY_REFRESH_TOKEN_ROTATION_ENABLED", {
      default: true,
      doc: "rotate refresh tokens and detect reuse",
    }),
    refreshTokenReuseInterval: r.seconds("SECURITY_REFRESH_TOKEN_REUSE_INTERVAL", {
      default: 10,
      doc:
        "seconds: a used refresh token gets the live one if issued this soon after its use (docs/sessions.md)",
    }),
    refreshTokenStamped: r.bool("SECURITY_REFRESH_TOKEN_STAMPED", {
      default: true,
      doc:
        "new refresh tokens begin with their time of issue; off while older servers run (docs/database.md)",
    }),
    updatePasswordRequireReauthentication: r.bool(
      "SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION",
      { doc: "a password change needs a nonce from /reauthenticate" },
    ),
    updatePasswordRequireCurrentPassword: r.bool(
      "SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD",
      {
        doc:
          "a password change needs current_password (except after a recovery, magic link or OTP)",
      },
    ),
    manualLinkingEnabled: r.bool("SECURITY_MANUAL_LINKING_ENABLED", {
      doc: "users may link and unlink identities (/user/identities); off: 404, as GoTrue",
    }),
    adminConfirmResetsUnproven: r.bool("SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN", {
      doc: "admin email_confirm of an unconfirmed account keeps only a password sent with it",
    }),
    linkIdentityRequirePkce: r.bool("SECURITY_LINK_IDENTITY_REQUIRE_PKCE", {
      doc: "link identities in the PKCE flow only (refuse implicit-flow links)",
    }),
    forwardedForHeader: forwardedForHeader(r, from),
    captcha: readCaptcha(r),
  };
}

function readCaptcha(r: ConfigReader): SecurityConfig["captcha"] {
  const enabled = r.bool("SECURITY_CAPTCHA_ENABLED", { doc: "require captcha_token" });
  return {
    enabled,
    provider: r.oneOf("SECURITY_CAPTCHA_PROVIDER", ["hcaptcha", "turnstile"] as const, {
      default: "hcaptcha",
      doc: "hCaptcha or Turnstile",
    }),
    secret: r.string("SECURITY_CAPTCHA_SECRET", {
      required: enabled,
      doc: "captcha provider secret",
    }),
    timeoutSec: r.seconds("SECURITY_CAPTCHA_TIMEOUT", {
      default: 10,
      doc: "captcha verification timeout",
    }),
    verifyUrl: r.url("SECURITY_CAPTCHA_VERIFY_URL", { doc: "siteverify URL override (tests)" }),
  };
}

/**
 * The header SECURITY_SB_FORWARDED_FOR_ENABLED trusts: the one of the name it
 * was set under. Under ours, `Authsvc-Proxy-Forwarded-For`; under GoTrue's
 * `GOTRUE_SECURITY_SB_FORWARDED_FOR_ENABLED`, GoTrue's `Sb-Forwarded-For`,
 * the header a proxy in front of GoTrue sets and strips (it passes ours on
 * from the client untouched). Never a header the operator did not name.
 */
function forwardedForHeader(r: ConfigReader, from: Record<string, string>): string {
  const name = "SECURITY_SB_FORWARDED_FOR_ENABLED";
  const on = r.bool(name, {
    doc: "client IP from Authsvc-Proxy-Forwarded-For; under GoTrue's name from Sb-Forwarded-For",
  });
  if (!on) return "";
  return from[r.name(name)] === `GOTRUE_${name}`
    ? "sb-forwarded-for"
    : "authsvc-proxy-forwarded-for";
}
