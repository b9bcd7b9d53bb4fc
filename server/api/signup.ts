/**
 * POST /signup: e-mail + password, phone + password, or (with
 * EXTERNAL_ANONYMOUS_USERS_ENABLED) an anonymous user. The handler reads
 * and checks the request; the sign-up itself (the user, the confirmation,
 * a known address's answer) is auth/signup.ts.
 */
import { readPkceParams } from "../auth/pkce.ts";
import { checkPassword } from "../auth/pwned.ts";
import { signUp, signUpAnonymously } from "../auth/signup.ts";
import type { SignupChannel } from "../auth/signup_request.ts";
import { normalizePhone } from "../auth/users.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { requestMeta } from "./meta.ts";
import { ApiError, badRequest, unprocessable } from "./errors.ts";
import { tokenSetResponse } from "./headers.ts";
import { checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";

/** POST /signup. */
export async function signup(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const cfg = s.config;
  const rawEmail = optString(body, "email", 320);
  const rawPhone = optString(body, "phone", 64);
  const password = optString(body, "password", 1024);
  const data = optObject(body, "data") ?? {};
  if (cfg.disableSignup) {
    throw unprocessable("Signups not allowed for this instance", "signup_disabled");
  }
  if (!rawEmail && !rawPhone) {
    if (password) {
      throw unprocessable("Signup requires an email or phone: email or phone is required");
    }
    return tokenSetResponse(c, await signUpAnonymously(s, data, requestMeta(c)));
  }
  if (rawEmail && rawPhone) {
    throw unprocessable("Only an email address or phone number should be provided on signup.");
  }

  let channel: SignupChannel;
  let address: string;
  if (rawEmail) {
    if (!cfg.external.emailEnabled) {
      throw unprocessable("Email signups are disabled", "email_provider_disabled");
    }
    channel = "email";
    address = checkEmail(rawEmail);
  } else {
    if (!cfg.external.phoneEnabled) {
      throw unprocessable("Phone signups are disabled", "phone_provider_disabled");
    }
    channel = "phone";
    const p = normalizePhone(rawPhone!);
    if (!p) throw unprocessable("Invalid phone number format (E.164 required): phone");
    address = p;
  }
  if (!password) throw unprocessable("Signup requires a valid password: password is required");
  await checkPassword(s, password);
  const outcome = await signUp(s, {
    channel,
    address,
    password,
    data,
    redirectTo: redirectToParam(c, body),
    pkce: readPkceParams(body),
  }, requestMeta(c));
  if ("set" in outcome) return tokenSetResponse(c, outcome.set);
  if ("user" in outcome) return c.json(outcome.user);
  if (outcome.alreadyExists === "phone") {
    throw badRequest("User already registered", "user_already_exists");
  }
  throw new ApiError(422, "user_already_exists", "User already registered");
}
