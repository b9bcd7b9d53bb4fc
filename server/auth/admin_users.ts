/**
 * What the admin users API (api/admin.ts) changes across several stores in
 * one transaction: an update that may confirm an unproven account or ban the
 * user, and a soft delete.
 */
import { type ConfirmDeps, endUnprovenAccess } from "./confirm.ts";
import type { UserFields, UserRow } from "./users.ts";

/** The columns an admin update writes over a given state of the user. */
export interface AdminChange {
  fields: UserFields;
  /**
   * Set when the update confirms an unproven account: the providers whose
   * identities stay (everything else the account held ends, auth/confirm.ts).
   */
  keepProviders?: string[];
}

/** Thrown inside the transaction when the user is gone: nothing is written. */
class UserGone extends Error {}

/**
 * Applies an admin update to user `userId` in one transaction: the row is
 * locked, `build` computes the change over the row as it is then (so
 * concurrent updates each land, metadata merges included), and with it the
 * local identities follow the new addresses; `endSessions` ends the user's
 * sessions too (a ban). Returns the written user, the unchanged one when
 * `build` has nothing to write, or null when the user does not exist.
 */
export async function updateUserAsAdmin(
  deps: ConfirmDeps,
  userId: string,
  build: (current: UserRow) => AdminChange,
  endSessions: boolean,
): Promise<UserRow | null> {
  const { users } = deps;
  try {
    return await users.transaction(async (tx) => {
      if (!await users.lockProfile(userId, tx)) throw new UserGone();
      const fresh = await users.findById(userId, tx);
      if (!fresh) throw new UserGone();
      const { fields, keepProviders } = build(fresh);
      if (!Object.keys(fields).length) return fresh;
      const u = await users.update(userId, fields, tx);
      if (!u) throw new UserGone();
      if (keepProviders) await endUnprovenAccess(deps, u.id, keepProviders, tx);
      if (endSessions) await deps.sessions.endAll(u.id, tx);
      if (u.email && (fields.email !== undefined || fields.email_confirmed_at)) {
        await users.syncLocalIdentity(u, "email", tx);
      }
      if (u.phone && (fields.phone !== undefined || fields.phone_confirmed_at)) {
        await users.syncLocalIdentity(u, "phone", tx);
      }
      return await users.findById(u.id, tx) ?? u;
    });
  } catch (e) {
    if (e instanceof UserGone) return null;
    throw e;
  }
}

/**
 * Marks the user deleted at `at`, in one transaction: the row stays (audit,
 * foreign keys); its identities and sessions end, so its addresses become
 * free again.
 */
export async function softDeleteUser(deps: ConfirmDeps, userId: string, at: Date): Promise<void> {
  await deps.users.transaction(async (tx) => {
    await deps.users.softDelete(userId, at, tx);
    await deps.sessions.endAll(userId, tx);
  });
}
