/**
 * POST /signup: e-mail + password, phone + password, or (with
 * EXTERNAL_ANONYMOUS_USERS_ENABLED) an anonymous user.
 *
 * With autoconfirm on (MAILER_AUTOCONFIRM for e-mail, SMS_AUTOCONFIRM for
 * phone) the answer is a session; with it off, the user, and the channel's
 * sign-up hooks send the confirmation (see `onSignup` below).
 *
 * Duplicates (spec 4, 7): with autoconfirm off a known address answers like a
 * fresh sign-up, with a fabricated user and a random id, so that nobody can
 * learn which addresses have accounts: the same members, timestamps that
 * move like a stored user's, and about the same time to answer (a fresh
 * sign-up's insert and mail are waited out). With autoconfirm on GoTrue answers 422
 * user_already_exists; a duplicate phone with SMS autoconfirm on is 400 "User
 * already registered" (spec 7.2). Parallel sign-ups of one address make one
 * user: the unique index decides, the loser is treated as a duplicate.
 */
import type { Hono } from "../../deps.ts";
import { isUniqueViolation } from "../db/db.ts";
import { checkPasswordStrength } from "../auth/passwords.ts";
import { normalizePhone, type UserRow, userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { type AppEnv, clientIp, type Ctx } from "./context.ts";
import { ApiError, badRequest, unprocessable } from "./errors.ts";
import { type Body, checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";

/** The channel a sign-up came through. */
export type SignupChannel = "email" | "phone";

/** What a sign-up hook gets. */
export interface SignupEvent {
  c: Ctx;
  s: Services;
  /** The user (fresh, or the existing one when `duplicate`). */
  user: UserRow;
  channel: SignupChannel;
  /** The parsed request body (code_challenge, channel, ... for the hook's own use). */
  body: Body;
  /** `redirect_to` of the request (query first, then body), unchecked. */
  redirectTo?: string;
  /**
   * True when the address already had an account: the answer is fabricated
   * whatever the hook does; a hook may e.g. resend the confirmation of a user
   * who is not confirmed yet, and must not reveal anything in its answer.
   */
  duplicate: boolean;
}

/**
 * A sign-up hook, run after the user is stored when autoconfirm is off for
 * its channel (the confirmation mail, the SMS code). It may return the
 * updated row (e.g. with confirmation_sent_at), which the answer then shows.
 * When a hook throws for a fresh user, the user is removed again, so the
 * sign-up can simply be retried, and the error is the answer.
 */
export type SignupHook = (ev: SignupEvent) => Promise<UserRow | void>;

const hooks = new WeakMap<Services, Record<SignupChannel, SignupHook[]>>();

function hooksOf(s: Services): Record<SignupChannel, SignupHook[]> {
  let h = hooks.get(s);
  if (!h) hooks.set(s, h = { email: [], phone: [] });
  return h;
}

/**
 * THE PLACE TO PLUG IN CONFIRMATIONS. Call it from your route group, e.g.
 *
 *   onSignup(s, "email", async ({ s, user, redirectTo, duplicate }) => { ...send mail...; return updatedUser; });
 *   onSignup(s, "phone", async ({ s, user }) => { ...send SMS code... });
 *
 * Hooks run in registration order, only when autoconfirm is off for the channel.
 */
export function onSignup(s: Services, channel: SignupChannel, hook: SignupHook): void {
  hooksOf(s)[channel].push(hook);
}

/**
 * How long the work after the address lookup takes for a fresh sign-up (the
 * insert, the confirmation mail), per server and channel, as a moving
 * average. A duplicate sign-up whose hooks send nothing (the address is
 * confirmed) waits as long, so that the answer's timing does not tell a known
 * address from a new one.
 */
const freshWork = new WeakMap<Services, Partial<Record<SignupChannel, number>>>();

function recordFreshWork(s: Services, channel: SignupChannel, ms: number): void {
  const m = freshWork.get(s) ?? {};
  const prev = m[channel];
  m[channel] = prev === undefined ? ms : prev * 0.8 + ms * 0.2;
  freshWork.set(s, m);
}

/** Waits until a duplicate sign-up has taken as long as a fresh one usually does (at most 5 s). */
async function padLikeFresh(s: Services, channel: SignupChannel, startedMs: number): Promise<void> {
  const typical = Math.min(freshWork.get(s)?.[channel] ?? 0, 5000);
  const wait = typical - (performance.now() - startedMs);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

/**
 * A user answer indistinguishable from a fresh sign-up, for a known address:
 * the same members and, like a stored user, created when the lookup ended
 * (`createdAt`) and updated (confirmation sent) later, once the hooks ran.
 */
function fabricatedUser(
  s: Services,
  channel: SignupChannel,
  address: string,
  data: Record<string, unknown>,
  confirmationSent: boolean,
  createdAt: Date,
): Record<string, unknown> {
  const later = s.clock.now();
  const now = later.getTime() > createdAt.getTime() ? later : new Date(createdAt.getTime() + 1);
  const id = crypto.randomUUID();
  const row: UserRow = {
    id,
    aud: s.config.jwt.aud,
    role: s.config.jwt.defaultGroupName || "authenticated",
    email: channel === "email" ? address : null,
    encrypted_password: null,
    email_confirmed_at: null,
    invited_at: null,
    confirmation_sent_at: confirmationSent && channel === "email" ? now : null,
    recovery_sent_at: null,
    email_change: null,
    email_change_sent_at: null,
    email_change_confirm_status: 0,
    phone: channel === "phone" ? address : null,
    phone_confirmed_at: null,
    phone_change: null,
    phone_change_sent_at: null,
    reauthentication_sent_at: null,
    last_sign_in_at: null,
    raw_app_meta_data: { provider: channel, providers: [channel] },
    raw_user_meta_data: data,
    banned_until: null,
    deleted_at: null,
    is_anonymous: false,
    created_at: createdAt,
    updated_at: confirmationSent ? now : createdAt,
  };
  if (confirmationSent && channel === "phone") row.confirmation_sent_at = now;
  const identity = {
    id: crypto.randomUUID(),
    user_id: id,
    provider: channel,
    provider_id: id,
    identity_data: {
      sub: id,
      [channel]: address,
      email_verified: false,
      phone_verified: false,
    },
    email: channel === "email" ? address : null,
    last_sign_in_at: createdAt,
    created_at: createdAt,
    updated_at: createdAt,
  };
  return userToJson(row, { identities: [identity] });
}

async function anonymousSignup(c: Ctx, s: Services, body: Body): Promise<Response> {
  if (!s.config.external.anonymousUsersEnabled) {
    throw unprocessable("Anonymous sign-ins are disabled", "anonymous_provider_disabled");
  }
  const data = optObject(body, "data") ?? {};
  const user = await s.users.create({
    aud: s.config.jwt.aud,
    role: s.config.jwt.defaultGroupName || "authenticated",
    is_anonymous: true,
    raw_user_meta_data: data,
    raw_app_meta_data: { provider: "anonymous", providers: ["anonymous"] },
  });
  await s.audit.record({
    action: "user_signedup",
    actorId: user.id,
    logType: "team",
    traits: { provider: "anonymous" },
    ip: clientIp(c),
  });
  s.events.emit("signup", { method: "anonymous" });
  const set = await s.sessions.issue(user, {
    method: "anonymous",
    ip: clientIp(c),
    userAgent: c.req.header("user-agent"),
  });
  return c.json(set);
}

/** POST /signup. */
export function signupRoutes(app: Hono<AppEnv>, s: Services): void {
  app.post("/signup", async (c) => {
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
      return await anonymousSignup(c, s, body);
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
    checkPasswordStrength(cfg, password);
    const autoconfirm = channel === "email" ? cfg.mailer.autoconfirm : cfg.sms.autoconfirm;
    const redirectTo = redirectToParam(c, body);

    // Hash first, whether or not the address is known, so both answers take as long.
    const hash = await s.passwords.hash(password);
    const now = s.clock.now();
    const find = (a: string) =>
      channel === "email" ? s.users.findByEmail(a) : s.users.findByPhone(a);
    let user: UserRow | null = null;
    let existing = await find(address);
    const lookedUp = performance.now();
    if (!existing) {
      try {
        user = await s.db.transaction((tx) =>
          s.users.createWithIdentities(
            {
              aud: cfg.jwt.aud,
              role: cfg.jwt.defaultGroupName || "authenticated",
              email: channel === "email" ? address : undefined,
              phone: channel === "phone" ? address : undefined,
              encrypted_password: hash,
              email_confirmed_at: channel === "email" && autoconfirm ? now : undefined,
              phone_confirmed_at: channel === "phone" && autoconfirm ? now : undefined,
              raw_user_meta_data: data,
            },
            [channel],
            tx,
          )
        );
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
        existing = await find(address); // a parallel sign-up of the same address won
        if (!existing) throw e;
      }
    }

    if (!user) {
      return await duplicateSignup(
        c,
        s,
        body,
        existing!,
        channel,
        address,
        data,
        autoconfirm,
        redirectTo,
        lookedUp,
      );
    }

    await s.audit.record({
      action: "user_signedup",
      actorId: user.id,
      actorUsername: user.email ?? user.phone ?? "",
      logType: "team",
      traits: { provider: channel },
      ip: clientIp(c),
    });
    s.events.emit("signup", { method: channel });

    if (autoconfirm) {
      const set = await s.sessions.issue(user, {
        method: "password",
        ip: clientIp(c),
        userAgent: c.req.header("user-agent"),
      });
      return c.json(set);
    }
    try {
      for (const hook of hooksOf(s)[channel]) {
        user = (await hook({ c, s, user, channel, body, redirectTo, duplicate: false })) ?? user;
      }
    } catch (e) {
      // As if the sign-up never happened (GoTrue rolls back its transaction),
      // except when the mail server failed: the user stays, and POST /resend
      // sends the confirmation once mail works again (issue 4).
      if (!(e instanceof ApiError && e.errorCode === "email_send_failed")) {
        await s.users.delete(user.id).catch(() => {});
      }
      throw e;
    }
    const answer = userToJson(user, { identities: await s.users.listIdentities(user.id) });
    recordFreshWork(s, channel, performance.now() - lookedUp);
    return c.json(answer);
  });
}

async function duplicateSignup(
  c: Ctx,
  s: Services,
  body: Body,
  existing: UserRow,
  channel: SignupChannel,
  address: string,
  data: Record<string, unknown>,
  autoconfirm: boolean,
  redirectTo: string | undefined,
  lookedUp: number,
): Promise<Response> {
  const createdAt = s.clock.now();
  await s.audit.record({
    action: "user_repeated_signup",
    actorId: existing.id,
    actorUsername: existing.email ?? existing.phone ?? "",
    logType: "user",
    traits: { provider: channel },
    ip: clientIp(c),
  });
  if (autoconfirm) {
    if (channel === "phone") throw badRequest("User already registered", "user_already_exists");
    throw new ApiError(422, "user_already_exists", "User already registered");
  }
  const list = hooksOf(s)[channel];
  for (const hook of list) {
    try {
      await hook({ c, s, user: existing, channel, body, redirectTo, duplicate: true });
    } catch (e) {
      // The answer must not differ from a fresh sign-up's: log, never surface.
      s.log.warn("sign-up hook failed for a known address", {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }
  await padLikeFresh(s, channel, lookedUp);
  return c.json(fabricatedUser(s, channel, address, data, list.length > 0, createdAt));
}
