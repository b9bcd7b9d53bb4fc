/**
 * Helpers of the security tests: accounts and operators (accounts with an
 * admin role, the designed way into the console) signed in over the HTTP
 * API, with or without a TOTP factor.
 */
import assert from "node:assert/strict";
import { call, uniqueEmail } from "../../helpers/http.ts";
import type { TestServer } from "../../helpers/server.ts";
import { totpAt } from "../mfa/_helpers.ts";

/** The password of the accounts made here (what a phishing page would collect). */
export const OPERATOR_PASSWORD = "operator-password-1";

/** An account of a test server (an operator's, or a user's). */
export interface Operator {
  email: string;
  userId: string;
  /** The base32 secret of the operator's verified TOTP factor ("" without one). */
  totpSecret: string;
  factorId: string;
}

/**
 * Creates a confirmed account with the service role (with `role`, e.g. an
 * admin role) and, with `totp`, enrolls and verifies a TOTP factor from a
 * password sign-in (`captchaToken` sent with it; `now`: the server's clock).
 */
export async function account(
  srv: TestServer,
  opts: { role?: string; totp?: boolean; captchaToken?: string; now?: () => number } = {},
): Promise<Operator> {
  const email = uniqueEmail(opts.role ? "operator" : "user");
  const made = await call(srv, "POST", "/admin/users", {
    body: { email, password: OPERATOR_PASSWORD, email_confirm: true, role: opts.role },
    token: await srv.serviceRoleToken(),
  });
  assert.equal(made.status, 200, made.text);
  const userId = made.body.id as string;
  if (!opts.totp) return { email, userId, totpSecret: "", factorId: "" };
  const token = await passwordSignIn(srv, email, { captchaToken: opts.captchaToken });
  const enrolled = await call(srv, "POST", "/factors", { body: { factor_type: "totp" }, token });
  assert.equal(enrolled.status, 200, enrolled.text);
  const factorId = enrolled.body.id as string;
  const totpSecret = (enrolled.body.totp as { secret: string }).secret;
  await totpStep(srv, token, { factorId, totpSecret }, opts.now);
  return { email, userId, totpSecret, factorId };
}

/** An operator: an account with the role `supabase_admin` (see {@link account}). */
export function operator(
  srv: TestServer,
  opts: { totp?: boolean; captchaToken?: string; now?: () => number } = {},
): Promise<Operator> {
  return account(srv, { ...opts, role: "supabase_admin" });
}

/** POST /token?grant_type=password as the operator would (or a thief with their password): the access token, aal1. */
export async function passwordSignIn(
  srv: TestServer,
  email: string,
  opts: { password?: string; captchaToken?: string } = {},
): Promise<string> {
  const r = await call(srv, "POST", "/token?grant_type=password", {
    body: {
      email,
      password: opts.password ?? OPERATOR_PASSWORD,
      ...(opts.captchaToken ? { gotrue_meta_security: { captcha_token: opts.captchaToken } } : {}),
    },
  });
  assert.equal(r.status, 200, r.text);
  return r.body.access_token as string;
}

/**
 * The TOTP step on the session of `token` (`now`: the server's clock, in
 * epoch milliseconds): the access token of that session raised to aal2.
 */
export async function totpStep(
  srv: TestServer,
  token: string,
  factor: Pick<Operator, "factorId" | "totpSecret">,
  now: () => number = Date.now,
): Promise<string> {
  const path = `/factors/${factor.factorId}`;
  const ch = await call(srv, "POST", `${path}/challenge`, { body: {}, token });
  assert.equal(ch.status, 200, ch.text);
  const v = await call(srv, "POST", `${path}/verify`, {
    body: { challenge_id: ch.body.id, code: totpAt(factor.totpSecret, now()) },
    token,
  });
  assert.equal(v.status, 200, v.text);
  return v.body.access_token as string;
}

/** The payload of a JWT. */
export function payloadOf(jwt: string): Record<string, unknown> {
  return JSON.parse(atob(jwt.split(".")[1].replaceAll("-", "+").replaceAll("_", "/")));
}
