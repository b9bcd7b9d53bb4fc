/**
 * The one error the domain throws on purpose: GoTrue's `error_code`, a message
 * for people, optional details (extra members of the error body such as
 * `weak_password: {reasons}`, or seconds to wait) and the `cause` that led to
 * it (so the underlying error reaches the logs). It carries no HTTP status:
 * `server/api/errors.ts` maps the code (and, for the few codes GoTrue answers
 * in two ways, the situation) to one, and `app.ts` writes the error body.
 * See docs/architecture.md, "Errors".
 */

/** Stable snake_case reasons, as GoTrue names them (its internal/api/apierrors/errorcode.go). */
export type ErrorCode =
  | "anonymous_provider_disabled"
  | "bad_code_verifier"
  | "bad_json"
  | "bad_jwt"
  | "bad_oauth_callback"
  | "bad_oauth_state"
  | "captcha_failed"
  | "conflict"
  | "current_password_invalid"
  | "current_password_required"
  | "email_address_invalid"
  | "email_address_not_authorized"
  | "email_conflict_identity_not_deletable"
  | "email_exists"
  | "email_not_confirmed"
  | "email_provider_disabled"
  | "flow_state_expired"
  | "flow_state_not_found"
  | "hook_payload_invalid_content_type"
  | "hook_payload_over_size_limit"
  | "hook_timeout"
  | "hook_timeout_after_retry"
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

/**
 * Where one error_code stands for two situations that GoTrue answers with
 * different statuses, the domain names the situation; the api layer's table
 * holds the status. Absent for the usual case.
 * - `oauth`: a request of the OAuth 2.0 protocol (a token grant, or the PKCE
 *   parameters of a flow), refused as RFC 6749 section 5.2 does;
 * - `linking`: linking an identity to a signed-in user;
 * - `challenge`: an MFA verification naming a challenge that does not exist;
 * - `recipient_refused`: an outside gateway refused the recipient;
 * - `upstream_failed`: an outside service failed or could not be reached;
 * - `upstream_timeout`: an outside service did not answer in time;
 * - `hook`: an auth hook rejected the attempt (auth/hooks.ts);
 * - `admin_token`: an admin token bound to a session that no longer opens
 *   the admin routes (auth/admin_access.ts, GoTrue's requireAdminCredentials);
 * - `aal_gate`: a route that needs an aal2 session once the user has a
 *   verified MFA factor (auth/assurance.ts, GoTrue's user.go);
 * - `parameter`: a request parameter a use case refused (validation_failed:
 *   400, as the api layer's own `badRequest`).
 */
export type Situation =
  | "oauth"
  | "linking"
  | "challenge"
  | "recipient_refused"
  | "upstream_failed"
  | "upstream_timeout"
  | "hook"
  | "admin_token"
  | "aal_gate"
  | "parameter";

/** What an AuthError carries besides its code and message. */
export interface AuthErrorOptions extends ErrorOptions {
  /** Extra members of the error body (e.g. `weak_password: {reasons}`). */
  details?: Record<string, unknown>;
  /** Seconds the client should wait before asking again (sent as Retry-After). */
  retryAfterSec?: number;
  /** The situation, for the few codes answered in two ways (see Situation). */
  situation?: Situation;
  /**
   * With situation `hook`: the status the hook's `{error: {http_code}}` asked
   * for; the api layer answers with it when it is a 4xx (as GoTrue does).
   */
  hookHttpCode?: number;
}

/** An error with a stable reason and a message for people. */
export class AuthError extends Error {
  /** Extra members of the error body. */
  readonly details: Record<string, unknown>;
  readonly retryAfterSec?: number;
  readonly situation?: Situation;
  readonly hookHttpCode?: number;

  constructor(readonly errorCode: ErrorCode, message: string, options: AuthErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AuthError";
    this.details = options.details ?? {};
    this.retryAfterSec = options.retryAfterSec;
    this.situation = options.situation;
    this.hookHttpCode = options.hookHttpCode;
  }
}

/** validation_failed naming what was wrong (GoTrue's 422 unless `situation` says otherwise). */
export function invalid(message: string, situation?: Situation): AuthError {
  return new AuthError("validation_failed", message, { situation });
}

/** The unique indexes a request can collide on, and GoTrue's answer to the sequential twin. */
const UNIQUE_ANSWERS: [RegExp, ErrorCode, string][] = [
  [/users_email_key/, "email_exists", "A user with this email address has already been registered"],
  [/users_phone_key/, "phone_exists", "A user with this phone number has already been registered"],
  [/users_pkey/, "user_already_exists", "A user with this id already exists"],
  [
    /mfa_factors_name_key/,
    "mfa_factor_name_conflict",
    "A factor with this friendly name for this user already exists",
  ],
  [
    /identities_provider_id_provider_key/,
    "identity_already_exists",
    "Identity is already linked to another user",
  ],
];

/**
 * The answer to a unique-constraint violation (SQLSTATE 23505) that a race
 * let through a check made before the write: the answer the same request
 * gets when it runs after the one it raced with (e.g. PUT /user to an
 * address another user took a moment earlier: email_exists). Undefined
 * for any other error, or a constraint this table does not know. The
 * violation is the answer's `cause`.
 */
export function uniqueViolationAnswer(e: unknown): AuthError | undefined {
  if ((e as { code?: unknown })?.code !== "23505") return undefined;
  const err = e as { constraint_name?: string; constraint?: string; message?: string };
  const text = `${err.constraint_name ?? err.constraint ?? ""} ${err.message ?? ""}`;
  const hit = UNIQUE_ANSWERS.find(([re]) => re.test(text));
  return hit && new AuthError(hit[1], hit[2], { cause: e });
}
