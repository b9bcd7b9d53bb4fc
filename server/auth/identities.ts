/**
 * Linking and unlinking identities of a signed-in user (GET
 * /user/identities/authorize, DELETE /user/identities/<id>), as GoTrue does:
 * a provider account belongs to one user only, the last identity stays, and
 * the user's address follows the identities that remain.
 */
import { AuthError } from "./errors.ts";
import type { ProviderName } from "../config/mod.ts";
import { type IdentityRow, isUniqueViolation, type UserRow } from "./users.ts";
import type { Domain } from "./deps.ts";
import { bannedCheck, candidateEmail, findIdentity, identityData } from "./accounts.ts";
import type { ProviderUser } from "../providers/types.ts";

/**
 * The checks of `linkIdentity` without the link (the PKCE callback, which
 * leaves the link to the code exchange): the user exists and is not banned,
 * and nobody has the provider account yet. Returns the user.
 *
 * @throws {AuthError} user_not_found, user_banned, identity_already_exists
 */
export async function checkLinkable(
  s: Domain,
  userId: string,
  provider: ProviderName,
  pu: ProviderUser,
): Promise<UserRow> {
  const target = await s.users.findById(userId);
  if (!target) {
    throw new AuthError("user_not_found", "Linking target user not found", {
      situation: "linking",
    });
  }
  bannedCheck(s, target);
  const existing = await findIdentity(s, provider, pu.id, s.db);
  if (existing) {
    throw new AuthError(
      "identity_already_exists",
      existing.user_id === target.id
        ? "Identity is already linked"
        : "Identity is already linked to another user",
    );
  }
  return target;
}

/**
 * Links a provider identity to a signed-in user (GET /user/identities/authorize).
 *
 * @throws {AuthError} identity_already_exists when the identity belongs to anyone already
 */
export async function linkIdentity(
  s: Domain,
  userId: string,
  provider: ProviderName,
  pu: ProviderUser,
  ip: string,
): Promise<UserRow> {
  const data = identityData(pu);
  return await s.db.transaction(async (tx) => {
    const target = await s.users.findById(userId, tx);
    if (!target) {
      throw new AuthError("user_not_found", "Linking target user not found", {
        situation: "linking",
      });
    }
    bannedCheck(s, target);
    await s.users.lockProfile(target.id, tx); // the user row before its identities (lock order)
    const existing = await findIdentity(s, provider, pu.id, tx);
    if (existing) {
      throw new AuthError(
        "identity_already_exists",
        existing.user_id === target.id
          ? "Identity is already linked"
          : "Identity is already linked to another user",
      );
    }
    let identity: IdentityRow;
    try {
      identity = await s.users.createIdentity({
        user_id: target.id,
        provider,
        provider_id: pu.id,
        identity_data: data,
      }, tx);
    } catch (e) {
      // A concurrent link of the same provider account committed first.
      if (isUniqueViolation(e)) {
        throw new AuthError("identity_already_exists", "Identity is already linked", { cause: e });
      }
      throw e;
    }
    const c = candidateEmail(pu.emails);
    if (!target.email && c?.verified) {
      try {
        await s.users.update(target.id, {
          email: c.email,
          email_confirmed_at: s.clock.now(),
          is_anonymous: false,
        }, tx);
      } catch (e) {
        if (isUniqueViolation(e)) {
          throw new AuthError(
            "email_exists",
            "A user with this email address has already been registered",
            { situation: "linking", cause: e },
          );
        }
        throw e;
      }
    }
    await s.users.addProvider(target.id, provider, tx);
    await s.audit.record({
      action: "identity_linked",
      actorId: target.id,
      actorUsername: target.email ?? "",
      traits: { identity_id: identity.id, provider, provider_id: pu.id },
      ip,
    }, tx);
    return await s.users.findById(target.id, tx) ?? target;
  });
}

/**
 * Unlinks one identity of a user (DELETE /user/identities/<id>): never the
 * last one. The user's address follows the remaining identities when it came
 * from the removed one, and app_metadata.providers is recomputed.
 *
 * @throws {AuthError} single_identity_not_deletable, identity_not_found,
 *   email_conflict_identity_not_deletable
 */
export async function unlinkIdentity(
  s: Domain,
  user: UserRow,
  identityId: string,
  ip: string,
): Promise<{ user: UserRow; identity: IdentityRow }> {
  return await s.db.transaction(async (tx) => {
    await s.users.lockProfile(user.id, tx); // the user row before its identities (lock order)
    const identities = await s.users.listIdentities(user.id, tx);
    if (identities.length <= 1) {
      throw new AuthError(
        "single_identity_not_deletable",
        "User must have at least 1 identity after unlinking",
      );
    }
    const identity = identities.find((i) => i.id === identityId);
    if (!identity) throw new AuthError("identity_not_found", "Identity doesn't exist");
    await s.users.deleteIdentity(identity.id, tx);
    const rest = identities.filter((i) => i.id !== identity.id);
    const fields: Record<string, unknown> = {};
    if (identity.provider === "phone") {
      fields.phone = null;
      fields.phone_confirmed_at = null;
    } else if (user.email && !rest.some((i) => i.email === user.email)) {
      // A verified address first, as GoTrue: the user then stays confirmed.
      const next = rest.find((i) => i.email && i.identity_data.email_verified === true) ??
        rest.find((i) => i.email);
      fields.email = next?.email ?? null;
      const verified = next?.identity_data.email_verified === true || s.config.mailer.autoconfirm;
      fields.email_confirmed_at = next && verified ? s.clock.now() : null;
    }
    const providers = [...new Set(rest.map((i) => i.provider))];
    const app: Record<string, unknown> = { ...user.raw_app_meta_data, providers };
    if (!providers.includes(String(app.provider))) app.provider = providers[0];
    fields.raw_app_meta_data = app;
    let updated: UserRow | null;
    try {
      updated = await s.users.update(user.id, fields, tx);
    } catch (e) {
      if (isUniqueViolation(e)) {
        throw new AuthError(
          "email_conflict_identity_not_deletable",
          "Unable to unlink identity due to email conflict",
          { cause: e },
        );
      }
      throw e;
    }
    await s.audit.record({
      action: "identity_unlinked",
      actorId: user.id,
      actorUsername: user.email ?? "",
      traits: {
        identity_id: identity.id,
        provider: identity.provider,
        provider_id: identity.provider_id,
      },
      ip,
    }, tx);
    return { user: updated ?? user, identity };
  });
}
