/**
 * GET /verify (the link in a mail) and POST /verify (a typed code, a
 * token_hash, or a phone code).
 *
 * GET: consumes the token and redirects (303) to `redirect_to` (checked
 * against SITE_URL / URI_ALLOW_LIST; the one stored with the token otherwise)
 * with the fragment `access_token, token_type, expires_in, expires_at,
 * refresh_token, type`, or, when the mail was requested with a PKCE
 * `code_challenge`, with `?code=` to exchange at POST /token?grant_type=pkce.
 * Failures redirect with `error, error_code, error_description` in the
 * fragment. HEAD requests and link prefetches (Purpose / Sec-Purpose:
 * prefetch, X-Moz: prefetch) never consume a token: mail scanners that open
 * links first do no harm. With MAILER_LINK_CONFIRMATION_PAGE a GET only shows
 * a page whose button POSTs the link (api/verify_page.ts): scanners that open
 * links without a prefetch header, even twice, use up nothing either.
 *
 * POST: `{type, token_hash}` (the link's token), `{type, token, email}` (the
 * code of the mail), or `{type: "sms" | "phone_change", phone, token}` (the
 * phone side, api/phone.ts), validated as GoTrue's VerifyParams.Validate. Answers a token set with
 * `type`; `password` sets the first password of a sign-up or an invite
 * (required for signup when the user has none) and is refused anywhere
 * else (auth/confirm.ts verifyMaySetPassword).
 */
import { issueAuthCode } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import {
  EMAIL_VERIFY_TYPES,
  type EmailCredential,
  type EmailVerified,
  type EmailVerifyType,
  verifiedSession,
  verifyEmailToken,
} from "../auth/verify_email.ts";
import { requestMeta } from "./meta.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { AuthError, badRequest, statusOf } from "./errors.ts";
import { optString, readBody } from "./input.ts";
import { verifyByPhone } from "./phone.ts";
import { confirmationPage, isPageConfirmation } from "./verify_page.ts";

function isEmailType(t: string): t is EmailVerifyType {
  return (EMAIL_VERIFY_TYPES as readonly string[]).includes(t);
}

function isPrefetch(c: Ctx): boolean {
  const purpose = `${c.req.header("purpose") ?? ""} ${c.req.header("sec-purpose") ?? ""} ${
    c.req.header("x-moz") ?? ""
  } ${c.req.header("x-purpose") ?? ""}`.toLowerCase();
  return /prefetch|preview/.test(purpose);
}

function withFragment(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  u.hash = new URLSearchParams(params).toString();
  return u.toString();
}

/**
 * The session's redirect, as GoTrue's AsRedirectURL builds it: the
 * parameters appended after a "#", so a hash-routed SITE_URL such as
 * `https://app/#/` keeps its route (`https://app/#/#access_token=…`).
 */
function tokenFragment(url: string, params: Record<string, string>): string {
  return `${url}#${new URLSearchParams(params)}`;
}

/** The OAuth `error` of a redirect, by the status the failure would have as JSON (GoTrue's map). */
const OAUTH_ERROR: Record<number, string> = {
  400: "invalid_request",
  401: "unauthorized_client",
  403: "access_denied",
  500: "server_error",
  503: "temporarily_unavailable",
};

const MSG_PARTIAL =
  "Confirmation link accepted. Please proceed to confirm link sent to the other email";

/**
 * GET /verify: the link of a mail; HEAD and prefetches are answered without consuming it, and
 * with MAILER_LINK_CONFIRMATION_PAGE every GET is (a page whose button POSTs the link).
 */
export async function verifyGet(c: Ctx, s: Services): Promise<Response> {
  if (c.req.method === "HEAD" || isPrefetch(c)) {
    return c.body(null, 200, { "cache-control": "no-store" });
  }
  if (s.config.mailer.linkConfirmationPage) return confirmationPage(c, c.req.query("type") ?? "");
  return await consumeLink(c, s);
}

/** Consumes the link's token (its query) and redirects with the session, the code or the error. */
async function consumeLink(c: Ctx, s: Services): Promise<Response> {
  const type = c.req.query("type") ?? "";
  const token = c.req.query("token") ?? "";
  const asked = c.req.query("redirect_to");
  let redirectTo = verifyRedirectTo(s.config, asked);
  // Redirects carry sessions and codes: never stored by a cache, never sent on as a referrer.
  c.header("cache-control", "no-store");
  c.header("referrer-policy", "no-referrer");
  // A PKCE flow's link (its token has the "pkce_" prefix) also answers in the query, where a
  // server-side app reads it, as GoTrue's prepRedirectURL / prepErrorRedirectURL do.
  let pkce = token.startsWith("pkce_");
  const answer = (params: Record<string, string>) => {
    const url = withFragment(redirectTo, params);
    if (!pkce) return url;
    const u = new URL(url);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u.toString();
  };
  const fail = (status: number, code: string, description: string) =>
    c.redirect(
      answer({
        error: OAUTH_ERROR[status] ?? (status < 500 ? "invalid_request" : "server_error"),
        error_code: code,
        error_description: description,
      }),
      303,
    );
  if (!isEmailType(type) || type === "email") {
    return fail(400, "validation_failed", "Verify requires a verification type");
  }
  if (!token) return fail(400, "validation_failed", "Verify requires a token");
  let v: EmailVerified;
  try {
    v = await verifyEmailToken(s, type, { kind: "link", token }, { ip: clientIp(c) });
  } catch (e) {
    if (e instanceof AuthError) {
      return fail(
        statusOf(e),
        e.errorCode,
        e.errorCode === "otp_expired" ? "Email link is invalid or has expired" : e.message,
      );
    }
    throw e;
  }
  const stored = typeof v.token.data?.redirect_to === "string" ? v.token.data.redirect_to : "";
  if (!asked && stored) redirectTo = verifyRedirectTo(s.config, stored);
  const flowId = typeof v.token.data?.flow_state_id === "string" ? v.token.data.flow_state_id : "";
  pkce ||= !!flowId;
  if (v.partial) return c.redirect(answer({ message: MSG_PARTIAL }), 303);
  if (flowId) {
    let code: string;
    try {
      code = await issueAuthCode(s.db, s.clock, flowId, v.user.id);
    } catch (e) {
      if (e instanceof AuthError) return fail(statusOf(e), e.errorCode, e.message);
      throw e;
    }
    const u = new URL(redirectTo);
    u.searchParams.set("code", code);
    return c.redirect(u.toString(), 303);
  }
  const set = await verifiedSession(s, v, requestMeta(c));
  return c.redirect(
    tokenFragment(redirectTo, {
      access_token: set.access_token,
      token_type: set.token_type,
      expires_in: String(set.expires_in),
      expires_at: String(set.expires_at),
      refresh_token: set.refresh_token,
      type: v.type,
    }),
    303,
  );
}

/** POST /verify; with MAILER_LINK_CONFIRMATION_PAGE also the confirmation page's button. */
export async function verifyPost(c: Ctx, s: Services): Promise<Response> {
  if (s.config.mailer.linkConfirmationPage && isPageConfirmation(c)) return await consumeLink(c, s);
  const body = await readBody(c);
  // Checked in the order of GoTrue's VerifyParams.Validate, with its messages.
  const type = optString(body, "type", 32);
  if (!type) throw badRequest("Verify requires a verification type");
  const tokenHash = optString(body, "token_hash", 256);
  const token = optString(body, "token", 256);
  if (!token === !tokenHash) throw badRequest("Verify requires either a token or a token hash");
  const email = optString(body, "email", 320);
  const phone = optString(body, "phone", 64);
  if (type === "sms" || type === "phone_change") {
    if (token) return c.json({ ...(await verifyByPhone(c, s, body, type)), type });
  }
  if (!isEmailType(type)) {
    throw badRequest(`type must be one of ${EMAIL_VERIFY_TYPES.join(", ")}, sms, phone_change`);
  }
  const password = optString(body, "password", 1024);
  let cred: EmailCredential;
  if (tokenHash) {
    if (email || phone || optString(body, "redirect_to", 2048)) {
      throw badRequest("Only the token_hash and type should be provided");
    }
    cred = { kind: "link", token: tokenHash };
  } else if (email && !phone) {
    cred = { kind: "code", email, code: token! };
  } else {
    throw badRequest("Only an email address or phone number should be provided on verify");
  }
  const v = await verifyEmailToken(s, type, cred, {
    password,
    passwordRequired: true,
    ip: clientIp(c),
  });
  if (v.partial) return c.json({ msg: MSG_PARTIAL, code: 200 });
  const set = await verifiedSession(s, v, requestMeta(c));
  return c.json({ ...set, type: v.type });
}
