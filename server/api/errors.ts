/**
 * HTTP statuses of the domain's errors, in one table, and the error body of
 * the contract: `{"code": <status>, "msg": "...", "error_code": "..."}` (plus
 * the error's details, e.g. `weak_password: {reasons}`). `app.ts`'s onError
 * answers every AuthError through `statusOf` and `errorResponse`.
 *
 * A status comes from, in this order:
 * 1. an ApiError's own status: only the api layer throws ApiError; its
 *    status is the table's or one listed in ROUTE_STATUS (an answer GoTrue
 *    gives on those routes alone), which tests/server/error_status_test.ts
 *    checks at every throw site;
 * 2. SITUATION_STATUS, where the domain names the situation of a code GoTrue
 *    answers in two ways (e.g. user_banned: 403, but 400 refusing a grant);
 * 3. STATUS, every code's status.
 */
import { AuthError, type ErrorCode, type Situation } from "../auth/errors.ts";

export { AuthError, type ErrorCode, uniqueViolationAnswer } from "../auth/errors.ts";

/** Every error_code's status (GoTrue's, or the one it uses most). */
export const STATUS: Readonly<Record<ErrorCode, number>> = {
  anonymous_provider_disabled: 422,
  bad_code_verifier: 400,
  bad_json: 400,
  bad_jwt: 403,
  bad_oauth_callback: 400,
  bad_oauth_state: 400,
  captcha_failed: 400,
  conflict: 409,
  current_password_invalid: 400,
  current_password_required: 400,
  email_address_invalid: 400,
  email_address_not_authorized: 400,
  email_conflict_identity_not_deletable: 422,
  email_exists: 422,
  email_not_confirmed: 400,
  email_provider_disabled: 422,
  email_send_failed: 500,
  flow_state_expired: 422,
  flow_state_not_found: 404,
  hook_payload_invalid_content_type: 400,
  hook_payload_over_size_limit: 422,
  hook_timeout: 422,
  hook_timeout_after_retry: 422,
  identity_already_exists: 422,
  identity_not_found: 422,
  insufficient_aal: 403,
  invalid_credentials: 400,
  manual_linking_disabled: 404,
  mfa_challenge_expired: 422,
  mfa_factor_name_conflict: 422,
  mfa_factor_not_found: 404,
  mfa_ip_address_mismatch: 422,
  mfa_phone_enroll_not_enabled: 422,
  mfa_totp_enroll_not_enabled: 422,
  mfa_verification_failed: 422,
  mfa_verification_rejected: 429,
  mfa_verified_factor_exists: 422,
  no_authorization: 401,
  not_admin: 403,
  not_found: 404,
  oauth_provider_error: 500,
  otp_disabled: 422,
  otp_expired: 403,
  over_email_send_rate_limit: 429,
  over_request_rate_limit: 429,
  over_sms_send_rate_limit: 429,
  phone_exists: 422,
  phone_not_confirmed: 400,
  phone_provider_disabled: 422,
  provider_disabled: 400,
  provider_email_needs_verification: 422,
  reauthentication_needed: 400,
  reauthentication_not_valid: 422,
  refresh_token_already_used: 400,
  refresh_token_not_found: 400,
  request_entity_too_large: 413,
  request_timeout: 504,
  same_password: 422,
  saml_provider_disabled: 404,
  service_unavailable: 503,
  session_expired: 400,
  session_not_found: 403,
  signup_disabled: 422,
  single_identity_not_deletable: 422,
  sms_send_failed: 500,
  too_many_enrolled_mfa_factors: 422,
  unexpected_failure: 500,
  unsupported_grant_type: 400,
  user_already_exists: 422,
  user_banned: 403,
  user_not_found: 404,
  validation_failed: 422,
  weak_password: 422,
  web3_provider_disabled: 422,
};

/** The codes GoTrue answers otherwise in a situation the domain names (see Situation). */
export const SITUATION_STATUS: Readonly<Record<Situation, Partial<Record<ErrorCode, number>>>> = {
  // RFC 6749 section 5.2: a refused grant or request parameter is a 400.
  oauth: { validation_failed: 400, user_banned: 400 },
  linking: { user_not_found: 422, email_exists: 400 },
  challenge: { mfa_factor_not_found: 422 },
  // A failed SMS send is 422 whatever the gateway did, as GoTrue's phone.go: auth-js turns a
  // 502 or 504 into a retryable error without its code. (No gateway configured: STATUS's 500.)
  recipient_refused: { sms_send_failed: 422 },
  upstream_failed: { sms_send_failed: 422, captcha_failed: 503 },
  upstream_timeout: { sms_send_failed: 422 },
  // GoTrue's answer to an MFA attempt the mfa_verification_attempt hook rejected.
  hook: { mfa_verification_rejected: 403 },
  admin_token: { session_expired: 403, user_not_found: 403, bad_jwt: 400 },
  aal_gate: { insufficient_aal: 401 },
  parameter: { validation_failed: 400 },
};

/**
 * The statuses some routes answer a code with instead of STATUS's, as GoTrue
 * does there; the api layer throws them as ApiError. The first row stands for
 * every handler that reads a request parameter.
 */
export const ROUTE_STATUS: readonly { code: ErrorCode; status: number; where: string }[] = [
  { code: "validation_failed", status: 400, where: "a missing or malformed request parameter" },
  { code: "validation_failed", status: 404, where: "GET /authorize: unknown provider" },
  { code: "email_provider_disabled", status: 400, where: "POST /resend" },
  { code: "phone_provider_disabled", status: 400, where: "phone sign-in routes (api/phone.ts)" },
  {
    code: "insufficient_aal",
    status: 422,
    where: "DELETE /factors/:id, a verified factor from an aal1 session (GoTrue's mfa.go)",
  },
  { code: "user_not_found", status: 403, where: "a token whose user is gone (api/context.ts)" },
  { code: "user_already_exists", status: 400, where: "POST /signup, a repeated sign-up" },
  {
    code: "no_authorization",
    status: 403,
    where: "/factors: an anonymous user (GoTrue's requireNotAnonymous)",
  },
];

/**
 * An AuthError with its HTTP status, thrown by the api layer only: the
 * status is STATUS's or one of ROUTE_STATUS. The domain throws AuthError.
 */
export class ApiError extends AuthError {
  constructor(
    readonly status: number,
    errorCode: ErrorCode,
    message: string,
    /** Extra members of the error body (e.g. `weak_password: {reasons}`). */
    details: Record<string, unknown> = {},
    /** Extra response headers. */
    readonly headers: Record<string, string> = {},
    options: ErrorOptions = {},
  ) {
    super(errorCode, message, { ...options, details });
    this.name = "ApiError";
  }
}

/** The HTTP status of `e` (see the order at the top of this file). */
export function statusOf(e: AuthError): number {
  if (e instanceof ApiError) return e.status;
  // A hook's own refusal answers with the 4xx the hook asked for, as GoTrue does.
  if (e.situation === "hook" && e.hookHttpCode !== undefined) {
    const h = e.hookHttpCode;
    if (Number.isInteger(h) && h >= 400 && h <= 499) return h;
  }
  return (e.situation && SITUATION_STATUS[e.situation][e.errorCode]) ?? STATUS[e.errorCode];
}

/** The error body of the contract. */
export function errorBody(e: AuthError): Record<string, unknown> {
  return { code: statusOf(e), error_code: e.errorCode, msg: e.message, ...e.details };
}

/** The answer to `e`: its status, the error body, Retry-After when it asks to wait. */
export function errorResponse(e: AuthError, requestId = ""): Response {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (e.retryAfterSec !== undefined) headers["Retry-After"] = String(e.retryAfterSec);
  if (e instanceof ApiError) Object.assign(headers, e.headers);
  if (requestId) headers["x-request-id"] = requestId;
  return new Response(JSON.stringify(errorBody(e)), { status: statusOf(e), headers });
}

/** 400 validation_failed naming the field. */
export function badRequest(message: string, code: ErrorCode = "validation_failed"): ApiError {
  return new ApiError(400, code, message);
}

/** 422 validation_failed (or `code`), as GoTrue answers for unprocessable values. */
export function unprocessable(message: string, code: ErrorCode = "validation_failed"): ApiError {
  return new ApiError(422, code, message);
}

/** 429 with Retry-After. */
export function tooManyRequests(
  code: ErrorCode,
  message: string,
  retryAfterSec: number,
): AuthError {
  return new AuthError(code, message, { retryAfterSec: Math.max(1, Math.ceil(retryAfterSec)) });
}
