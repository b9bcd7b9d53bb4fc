/**
 * The one error the server throws on purpose. `app.ts` turns it into the
 * contract's error body: `{"code": <status>, "msg": "...", "error_code": "..."}`
 * (plus `weak_password: {reasons}` and other extras where GoTrue has them).
 */

/** Stable snake_case reasons, as GoTrue names them. */
export type ErrorCode =
  | "anonymous_provider_disabled"
  | "bad_code_verifier"
  | "bad_json"
  | "bad_jwt"
  | "bad_oauth_callback"
  | "bad_oauth_state"
  | "captcha_failed"
  | "conflict"
  | "email_address_invalid"
  | "email_address_not_authorized"
  | "email_conflict_identity_not_deletable"
  | "email_exists"
  | "email_not_confirmed"
  | "email_provider_disabled"
  | "flow_state_expired"
  | "flow_state_not_found"
  | "identity_already_exists"
  | "identity_not_found"
  | "insufficient_aal"
  | "invalid_credentials"
  | "manual_linking_disabled"
  | "mfa_challenge_expired"
  | "mfa_factor_name_conflict"
  | "mfa_factor_not_found"
  | "mfa_ip_address_mismatch"
  | "mfa_phone_enroll_not_enabled"
  | "mfa_totp_enroll_not_enabled"
  | "mfa_verification_failed"
  | "mfa_verification_rejected"
  | "mfa_verified_factor_exists"
  | "no_authorization"
  | "not_admin"
  | "not_found"
  | "oauth_provider_error"
  | "otp_disabled"
  | "otp_expired"
  | "over_email_send_rate_limit"
  | "over_request_rate_limit"
  | "over_sms_send_rate_limit"
  | "phone_exists"
  | "phone_not_confirmed"
  | "phone_provider_disabled"
  | "provider_disabled"
  | "provider_email_needs_verification"
  | "reauthentication_needed"
  | "reauthentication_not_valid"
  | "refresh_token_already_used"
  | "refresh_token_not_found"
  | "request_entity_too_large"
  | "request_timeout"
  | "same_password"
  | "saml_provider_disabled"
  | "service_unavailable"
  | "session_expired"
  | "session_not_found"
  | "signup_disabled"
  | "single_identity_not_deletable"
  | "sms_send_failed"
  | "email_send_failed"
  | "too_many_enrolled_mfa_factors"
  | "unexpected_failure"
  | "unsupported_grant_type"
  | "user_already_exists"
  | "user_banned"
  | "user_not_found"
  | "validation_failed"
  | "weak_password"
  | "web3_provider_disabled";

/** An error with an HTTP status, a stable reason and a message for people. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: ErrorCode,
    message: string,
    /** Extra members of the error body (e.g. `weak_password: {reasons}`). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** The error body of the contract. */
  body(): Record<string, unknown> {
    return { code: this.status, error_code: this.errorCode, msg: this.message, ...this.extra };
  }
}

/** 400 validation_failed naming the field. */
export function badRequest(message: string, code: ErrorCode = "validation_failed"): ApiError {
  return new ApiError(400, code, message);
}

/** 422 validation_failed, as GoTrue answers for unprocessable values. */
export function unprocessable(message: string, code: ErrorCode = "validation_failed"): ApiError {
  return new ApiError(422, code, message);
}

/** 429 with Retry-After. */
export function tooManyRequests(code: ErrorCode, message: string, retryAfterSec: number): ApiError {
  return new ApiError(429, code, message, {}, {
    "Retry-After": String(Math.max(1, Math.ceil(retryAfterSec))),
  });
}

/** The unique indexes a request can collide on, and GoTrue's answer to the sequential twin. */
const UNIQUE_ANSWERS: [RegExp, () => ApiError][] = [
  [
    /users_email_key/,
    () =>
      unprocessable("A user with this email address has already been registered", "email_exists"),
  ],
  [
    /users_phone_key/,
    () =>
      unprocessable("A user with this phone number has already been registered", "phone_exists"),
  ],
  [/users_pkey/, () => unprocessable("A user with this id already exists", "user_already_exists")],
  [/mfa_factors_name_key/, () =>
    unprocessable(
      "A factor with this friendly name for this user already exists",
      "mfa_factor_name_conflict",
    )],
  [
    /identities_provider_id_provider_key/,
    () => unprocessable("Identity is already linked to another user", "identity_already_exists"),
  ],
];

/**
 * The answer to a unique-constraint violation (SQLSTATE 23505) that a race
 * let through a check made before the write: the answer the same request
 * gets when it runs after the one it raced with (e.g. PUT /user to an
 * address another user took a moment earlier: 422 email_exists). Undefined
 * for any other error, or a constraint this table does not know.
 */
export function uniqueViolationAnswer(e: unknown): ApiError | undefined {
  if ((e as { code?: unknown })?.code !== "23505") return undefined;
  const err = e as { constraint_name?: string; constraint?: string; message?: string };
  const text = `${err.constraint_name ?? err.constraint ?? ""} ${err.message ?? ""}`;
  return UNIQUE_ANSWERS.find(([re]) => re.test(text))?.[1]();
}
