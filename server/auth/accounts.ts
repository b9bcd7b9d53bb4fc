/**
 * Account decisions of an external sign-in (GoTrue's DetermineAccountLinking,
 * kept strict): the identity (provider, provider id) decides first; without
 * one, the user is linked to an existing account ONLY through an address the
 * provider verified, else a new user is created. An unverified address never
 * reaches an existing account: a new user gets it only when nobody has it,
 * and cannot sign in before it is verified.
 *
 * Linking an existing account that never confirmed its address (someone may
 * have signed up with a victim's address and a password of their own)
 * confirms it by the one rule of auth/confirm.ts first: the provider proved
 * ownership, the squatter's password, identities and sessions must not survive.
 */
import { refuseBanned } from "./ban.ts";
import { userCreated } from "./hooks_install.ts";
import { AuthError } from "./errors.ts";
import type { ProviderName } from "../config/mod.ts";
import type { Queryable } from "../db/db.ts";
import { confirmAddress, confirmDepsOf } from "./confirm.ts";
import { type IdentityRow, isUniqueViolation, type UserRow } from "./users.ts";
import { sendActionMail } from "./action_mail.ts";
import type { Domain } from "./deps.ts";
import type { ProviderEmail, ProviderUser } from "../providers/types.ts";

/** The result of a sign-in decision. */
export interface AccountOutcome {
  user: UserRow;
  /** A new user was created. */
  created: boolean;
  /** A new identity was linked to an existing user by a verified address. */
  linkedByEmail: boolean;
}

/** The address that represents the user: the primary one, else the first verified, else the first. */
export function candidateEmail(emails: ProviderEmail[]): ProviderEmail | undefined {
  return emails.find((e) => e.primary) ?? emails.find((e) => e.verified) ?? emails[0];
}

/** The identity_data GoTrue stores (and auth-js shows) for a provider user. */
export function identityData(u: ProviderUser): Record<string, unknown> {
  const c = candidateEmail(u.emails);
  const d: Record<string, unknown> = {
    iss: u.issuer,
    sub: u.id,
    provider_id: u.id,
    email: c?.email.toLowerCase(),
    email_verified: c?.verified ?? false,
    phone_verified: false,
    name: u.name,
    full_name: u.name,
    avatar_url: u.avatarUrl,
    picture: u.avatarUrl,
    user_name: u.userName,
    preferred_username: u.userName,
    custom_claims: u.customClaims && Object.keys(u.customClaims).length
      ? u.customClaims
      : undefined,
  };
  for (const k of Object.keys(d)) if (d[k] === undefined) delete d[k];
  return d;
}

/** 403 user_banned while the user is banned. */
export function bannedCheck(s: Domain, user: UserRow): void {
  refuseBanned(user, s.clock.now());
}

/** The identity of (provider, provider id), if any. */
export async function findIdentity(
  s: Domain,
  provider: string,
  providerId: string,
  q: Queryable,
): Promise<IdentityRow | undefined> {
  return await s.users.findIdentity(provider, providerId, q);
}

async function touchIdentity(
  s: Domain,
  id: string,
  data: Record<string, unknown>,
  q: Queryable,
): Promise<void> {
  await s.users.touchIdentity(id, data, s.clock.now(), q);
}

/** Users owning one of `emails` (as user e-mail or through an identity's e-mail). */
async function ownersOf(s: Domain, emails: string[], q: Queryable): Promise<string[]> {
  return await s.users.ownersOfEmails(emails, q);
}

/**
 * Finds or creates the user of a provider sign-in (in one transaction, tried
 * again once when a concurrent sign-in committed the same rows first).
 *
 * @throws {AuthError} signup_disabled, provider_email_needs_verification
 *   (no address, or an unverified one), email_exists; 403 user_banned
 */
export async function signInUser(
  s: Domain,
  provider: ProviderName,
  pu: ProviderUser,
  opts: { emailOptional: boolean; ip: string; redirectTo?: string },
): Promise<AccountOutcome> {
  if (pu.emails.length === 0 && !opts.emailOptional) {
    throw new AuthError(
      "provider_email_needs_verification",
      `Error getting user email from external provider: ${provider} did not share an e-mail address`,
    );
  }
  const data = identityData(pu);
  const decide = (tx: Queryable): Promise<AccountOutcome & { unverified?: boolean }> =>
    decideAccount(s, provider, pu, data, opts, tx);
  let outcome: AccountOutcome & { unverified?: boolean };
  try {
    outcome = await s.db.transaction(decide);
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    // Another sign-in committed the same address or identity meanwhile (the same person
    // in a second tab): deciding again sees its rows. A conflict again is a real one.
    try {
      outcome = await s.db.transaction(decide);
    } catch (e2) {
      if (!isUniqueViolation(e2)) throw e2;
      throw new AuthError(
        "email_exists",
        "A user with this email address has already been registered",
      );
    }
  }
  if (outcome.created) {
    s.events.emit("signup", { method: "oauth", provider });
    await userCreated(s, outcome.user, opts.ip);
  }
  if (outcome.unverified) {
    let sent = false;
    if (outcome.user.email) {
      // As GoTrue: a confirmation mail proves the address; the next sign-in then works.
      try {
        // The confirmation of this provider sign-in: its identity stays (auth/confirm.ts).
        await sendActionMail(s, outcome.user, "confirmation", {
          redirectTo: opts.redirectTo,
          signup: { provider },
        });
        sent = true;
      } catch (e) {
        s.log.warn("confirmation mail for a provider sign-in not sent", {
          provider,
          error: e instanceof Error ? e.message : String(e),
        });
      }
    }
    throw new AuthError(
      "provider_email_needs_verification",
      sent
        ? `Unverified email with ${provider}. A confirmation email has been sent to your ${provider} email`
        : `Unverified email with ${provider}. Verify the email with ${provider} in order to sign in`,
    );
  }
  return { user: outcome.user, created: outcome.created, linkedByEmail: outcome.linkedByEmail };
}

/** One attempt at the account decision, inside a transaction (see signInUser). */
async function decideAccount(
  s: Domain,
  provider: ProviderName,
  pu: ProviderUser,
  data: Record<string, unknown>,
  opts: { emailOptional: boolean; ip: string },
  tx: Queryable,
): Promise<AccountOutcome & { unverified?: boolean }> {
  const existing = await findIdentity(s, provider, pu.id, tx);
  if (existing) {
    const user = await s.users.findById(existing.user_id, tx);
    if (!user) throw new AuthError("user_not_found", "User not found");
    bannedCheck(s, user);
    await s.users.lockProfile(user.id, tx); // the user row before its identity (lock order)
    await touchIdentity(s, existing.id, data, tx);
    let fresh = await mergeMetadata(s, user, data, provider, tx);
    let unverified = false;
    if (fresh.email && !fresh.email_confirmed_at) {
      const c = candidateEmail(pu.emails);
      const proven = c?.verified && c.email.toLowerCase() === fresh.email;
      if (proven || s.config.mailer.autoconfirm) {
        // The one rule of auth/confirm.ts (this identity made the account; it stays).
        fresh = await confirmAddress(confirmDepsOf(s), fresh, {
          channels: ["email"],
          signup: null,
          data: fresh.raw_user_meta_data,
          keepProviders: [provider],
          now: s.clock.now(),
        }, tx);
      } else unverified = true;
    } else if (!fresh.email && !opts.emailOptional) unverified = true;
    if (!unverified) {
      await s.audit.record({
        action: "login",
        actorId: user.id,
        actorUsername: user.email ?? "",
        traits: { provider },
        ip: opts.ip,
      }, tx);
    }
    return { user: fresh, created: false, linkedByEmail: false, unverified };
  }

  const verified = [
    ...new Set(
      pu.emails.filter((e) => e.verified).map((e) => e.email.toLowerCase()),
    ),
  ];
  const candidate = candidateEmail(pu.emails);
  if (verified.length) {
    const owners = [...new Set(await ownersOf(s, verified, tx))];
    if (owners.length > 1) {
      throw new AuthError(
        "email_exists",
        "Multiple accounts with the same email address exist; sign in to one and link the others",
      );
    }
    if (owners.length === 1) {
      let user = await s.users.findById(owners[0], tx);
      if (!user) throw new AuthError("user_not_found", "User not found");
      bannedCheck(s, user);
      await s.users.lockProfile(user.id, tx); // the user row before its identities (lock order)
      if (!user.email_confirmed_at && user.email) {
        // Pre-account-takeover defence (auth/confirm.ts): the provider proved who owns the
        // address; an unproven account's password, other identities, factors, sessions and
        // metadata go before this identity is linked.
        user = await confirmAddress(confirmDepsOf(s), user, {
          channels: ["email"],
          signup: null,
          keepProviders: [],
          now: s.clock.now(),
        }, tx);
      }
      const identity = await s.users.createIdentity({
        user_id: user.id,
        provider,
        provider_id: pu.id,
        identity_data: data,
      }, tx);
      const fresh = await mergeMetadata(s, user, data, provider, tx);
      await s.audit.record({
        action: "identity_linked",
        actorId: user.id,
        actorUsername: user.email ?? "",
        traits: { identity_id: identity.id, provider, provider_id: pu.id },
        ip: opts.ip,
      }, tx);
      await s.audit.record({
        action: "login",
        actorId: user.id,
        actorUsername: user.email ?? "",
        traits: { provider },
        ip: opts.ip,
      }, tx);
      return { user: fresh, created: false, linkedByEmail: true };
    }
  }

  if (s.config.disableSignup) {
    throw new AuthError("signup_disabled", "Signups not allowed for this instance");
  }
  let email = candidate?.email.toLowerCase() ?? null;
  if (email && !candidate?.verified && await s.users.findByEmail(email, tx)) {
    // An unverified address that someone already has stays theirs. No user is made
    // without it either: one without an address could never sign in.
    if (!opts.emailOptional) {
      throw new AuthError(
        "provider_email_needs_verification",
        `Unverified email with ${provider}. Verify the email with ${provider} in order to sign in`,
      );
    }
    email = null;
  }
  const confirmed = !!email && (candidate!.verified || s.config.mailer.autoconfirm);
  const now = s.clock.now();
  // A unique violation here (the address, or this identity) is retried below.
  const user = await s.users.create({
    aud: s.config.jwt.aud,
    role: "authenticated",
    email,
    email_confirmed_at: confirmed ? now : null,
    raw_app_meta_data: { provider, providers: [provider] },
    raw_user_meta_data: data,
  }, tx);
  await s.users.createIdentity({
    user_id: user.id,
    provider,
    provider_id: pu.id,
    identity_data: data,
  }, tx);
  await s.audit.record({
    action: "user_signedup",
    actorId: user.id,
    actorUsername: user.email ?? "",
    traits: { provider },
    ip: opts.ip,
  }, tx);
  const needsVerification = !confirmed && !(opts.emailOptional && !email);
  return { user, created: true, linkedByEmail: false, unverified: needsVerification };
}

/** Merges identity data into user_metadata and adds the provider to app_metadata. */
async function mergeMetadata(
  s: Domain,
  user: UserRow,
  data: Record<string, unknown>,
  provider: string,
  q: Queryable,
): Promise<UserRow> {
  const meta = { ...user.raw_user_meta_data, ...data };
  await s.users.update(user.id, { raw_user_meta_data: meta }, q);
  await s.users.addProvider(user.id, provider, q);
  return await s.users.findById(user.id, q) ?? user;
}
