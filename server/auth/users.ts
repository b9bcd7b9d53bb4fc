/**
 * Users and identities: the rules over their rows (the statements are in
 * server/store/users.ts, identities.ts and profile.ts), and the JSON shape
 * `@supabase/auth-js` reads. E-mail addresses are stored
 * lower-cased; phones as GoTrue stores and shows them: E.164 digits without
 * the leading "+" ("15551234567").
 */
import type { Db, Queryable } from "../db/db.ts";
import { type IdentityRow, IdentityStore } from "../store/identities.ts";
import { type Profile, type ProfileRevision, ProfileStore } from "../store/profile.ts";
import { type UserFields, type UserPage, type UserRow, UserStore } from "../store/users.ts";

export type { IdentityRow } from "../store/identities.ts";
export type { UserFields, UserPage, UserRow } from "../store/users.ts";
export type { Profile, ProfileRevision } from "../store/profile.ts";
/** A unique constraint was violated: the address, phone, id or identity is someone's already. */
export { isUniqueViolation } from "../store/users.ts";

const ts = (d: Date | null | undefined) =>
  d ? (d instanceof Date ? d : new Date(d)).toISOString() : undefined;

import { normalizeEmail } from "../util/address.ts";
export { normalizeEmail, normalizePhone } from "../util/address.ts";

/** The identity providers a user created by e-mail or phone gets. */
export type LocalProvider = "email" | "phone";

/** Users and identities over one database: the rules, with the SQL in server/store/. */
export class Users {
  readonly #db: Db;
  readonly #users: UserStore;
  readonly #identities: IdentityStore;
  readonly #profiles: ProfileStore;
  /**
   * Asked with the user about to be created (auth/hooks_install.ts: GoTrue's
   * before_user_created hook); throwing refuses the creation. `tx` is the
   * caller's transaction, when there is one.
   */
  beforeCreate?: (user: Record<string, unknown>, tx?: Queryable) => Promise<void>;

  constructor(db: Db) {
    this.#db = db;
    this.#users = new UserStore(db);
    this.#identities = new IdentityStore(db);
    this.#profiles = new ProfileStore(db);
  }

  /** Runs `fn` in one transaction; pass its `tx` to the methods that take one. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#db.transaction(fn);
  }

  findById(id: string, q: Queryable = this.#db): Promise<UserRow | null> {
    return this.#users.findById(id, q);
  }

  /**
   * Whether a user other than `userId` has `email`, as its address or through
   * one of its identities (GoTrue's IsDuplicatedEmail, the check of an e-mail
   * change).
   */
  emailTakenByOther(email: string, userId: string, q: Queryable = this.#db): Promise<boolean> {
    return this.#users.emailTakenByOther(normalizeEmail(email), userId, q);
  }

  findByEmail(email: string, q: Queryable = this.#db): Promise<UserRow | null> {
    return this.#users.findByEmail(normalizeEmail(email), q);
  }

  findByPhone(phone: string, q: Queryable = this.#db): Promise<UserRow | null> {
    return this.#users.findByPhone(phone, q);
  }

  /** The user whose pending e-mail change goes to `email` (the latest asked), if any. */
  findByPendingEmail(email: string): Promise<UserRow | null> {
    return this.#users.findByPendingEmail(email);
  }

  /** The user whose pending phone change goes to `phone` (the latest asked), if any. */
  findByPendingPhone(phone: string): Promise<UserRow | null> {
    return this.#users.findByPendingPhone(phone);
  }

  /** Users owning one of `emails` (as user e-mail or through an identity's e-mail). */
  ownersOfEmails(emails: string[], q: Queryable = this.#db): Promise<string[]> {
    return this.#users.ownersOfEmails(emails, q);
  }

  /**
   * One page of the users not deleted whose e-mail or full name contains
   * `filter` (case-insensitive), newest first unless `ascending`.
   */
  list(
    o: { filter: string; ascending: boolean; page: number; perPage: number },
  ): Promise<UserPage> {
    return this.#users.list({
      filter: o.filter,
      ascending: o.ascending,
      limit: o.perPage,
      offset: (o.page - 1) * o.perPage,
    });
  }

  /**
   * Inserts a user; unique violations propagate (see isUniqueViolation).
   * `beforeCreate` is asked first unless `opts.hooks` is false (an admin's
   * POST /admin/users, as in GoTrue).
   */
  async create(
    fields: UserFields,
    q: Queryable = this.#db,
    opts: { hooks?: boolean } = {},
  ): Promise<UserRow> {
    const f = withNormalEmail(fields);
    if (this.beforeCreate && opts.hooks !== false) {
      // The user as it will be: its id chosen here, so the hook sees the one it gets.
      f.id ??= crypto.randomUUID();
      const now = new Date();
      const draft = {
        aud: "",
        role: "",
        is_anonymous: false,
        ...f,
        raw_app_meta_data: f.raw_app_meta_data ?? {},
        raw_user_meta_data: f.raw_user_meta_data ?? {},
        created_at: now,
        updated_at: now,
      } as unknown as UserRow;
      await this.beforeCreate(userToJson(draft), q === this.#db ? undefined : q);
    }
    return await this.#users.create(f, q);
  }

  /** Updates columns of one user and returns the row (null when gone). */
  update(id: string, fields: UserFields, q: Queryable = this.#db): Promise<UserRow | null> {
    return this.#users.update(id, withNormalEmail(fields), q);
  }

  /**
   * Updates columns of one user in a transaction; with `merge`, the row is
   * locked first and `merge` sees it as it is then, so concurrent updates
   * (metadata merges) each land, as they would one after the other.
   * Returns the row (null when gone).
   */
  updateMerging(
    id: string,
    fields: UserFields,
    merge?: (current: UserRow) => void,
  ): Promise<UserRow | null> {
    return this.#db.transaction(async (tx) => {
      if (merge) {
        await this.lockProfile(id, tx);
        const current = await this.findById(id, tx);
        if (current) merge(current);
      }
      return await this.update(id, fields, tx);
    });
  }

  /**
   * Writes the user row before a transaction writes the user's identities or
   * MFA factors: it takes the row's lock and a new profile revision
   * (migrations/0009_profile_rev.sql). The trigger on identities and factors
   * would lock the user row too, but only after the identity's or factor's
   * row; taking the user first keeps one lock order in every transaction (no
   * deadlock with one that wrote the user and then an identity). Returns
   * false when the user does not exist (or is deleted).
   */
  lockProfile(userId: string, q: Queryable): Promise<boolean> {
    return this.#users.lockProfile(userId, q);
  }

  /** Records one side of a secure e-mail change, in one statement (auth/email_change.ts). */
  confirmEmailChangeSide(userId: string, side: number): Promise<number | null> {
    return this.#users.confirmEmailChangeSide(userId, side);
  }

  /**
   * Creates a user with its `email` and/or `phone` identities (provider_id =
   * the user id, identity_data {sub, email, email_verified, phone_verified})
   * and app_metadata {provider, providers} merged over `fields.raw_app_meta_data`,
   * in `q` or in a transaction of its own. A duplicate address is a unique violation.
   */
  async createWithIdentities(
    fields: UserFields,
    providers: LocalProvider[],
    q?: Queryable,
    opts: { hooks?: boolean } = {},
  ): Promise<UserRow> {
    if (!q) {
      return await this.#db.transaction((tx) =>
        this.createWithIdentities(fields, providers, tx, opts)
      );
    }
    const app: Record<string, unknown> = { ...(fields.raw_app_meta_data ?? {}) };
    if (providers.length) {
      app.provider = providers[0];
      app.providers = [...providers];
    }
    const user = await this.create({ ...fields, raw_app_meta_data: app }, q, opts);
    for (const provider of providers) {
      await this.createIdentity({
        user_id: user.id,
        provider,
        provider_id: user.id,
        identity_data: localIdentityData(user, provider),
      }, q);
    }
    return user;
  }

  /**
   * A new user's row and its `email` / `phone` identities as
   * createWithIdentities writes them, for a statement that inserts them
   * itself: the e-mail in its canonical form, app_metadata's provider and
   * providers, and the user's id chosen here so the identities can name it.
   */
  localUser(fields: UserFields, providers: LocalProvider[]): {
    fields: UserFields & { id: string };
    identities: {
      provider: string;
      provider_id: string;
      identity_data: Record<string, unknown>;
      email: string | null;
    }[];
  } {
    const app: Record<string, unknown> = { ...(fields.raw_app_meta_data ?? {}) };
    if (providers.length) {
      app.provider = providers[0];
      app.providers = [...providers];
    }
    const f = withNormalEmail({ ...fields, raw_app_meta_data: app });
    const id = f.id ?? crypto.randomUUID();
    const draft = { ...f, id } as unknown as UserRow;
    return {
      fields: { ...f, id },
      identities: providers.map((provider) => {
        const data = localIdentityData(draft, provider);
        return {
          provider,
          provider_id: id,
          identity_data: data,
          email: typeof data.email === "string" ? normalizeEmail(data.email) : null,
        };
      }),
    };
  }

  /**
   * Keeps the `email` / `phone` identity in step with the user row after an
   * address or confirmation changed: creates it when missing (and adds the
   * provider), updates identity_data otherwise.
   */
  async syncLocalIdentity(
    user: UserRow,
    provider: LocalProvider,
    q?: Queryable,
  ): Promise<void> {
    // Outside a transaction: one of its own, the user row first (lockProfile).
    if (!q) {
      return await this.#db.transaction(async (tx) => {
        await this.lockProfile(user.id, tx);
        await this.syncLocalIdentity(user, provider, tx);
      });
    }
    const data = localIdentityData(user, provider);
    const email = provider === "email" ? user.email : null;
    if (await this.#identities.updateData(user.id, provider, data, email, q)) return;
    await this.createIdentity(
      { user_id: user.id, provider, provider_id: user.id, identity_data: data },
      q,
    );
    await this.addProvider(user.id, provider, q);
  }

  /** Removes the user row (identities, sessions and tokens go with it). */
  delete(id: string, q: Queryable = this.#db): Promise<boolean> {
    return this.#users.delete(id, q);
  }

  /**
   * Marks the user deleted at `at` and removes its identities: the row stays
   * (audit, foreign keys), the addresses become free again.
   */
  async softDelete(id: string, at: Date, q: Queryable): Promise<void> {
    await this.#users.markDeleted(id, at, q);
    await this.#identities.deleteAllOf(id, q);
  }

  listIdentities(userId: string, q: Queryable = this.#db): Promise<IdentityRow[]> {
    return this.#identities.listByUser(userId, q);
  }

  /** The identities of several users, by user id. */
  identitiesOfUsers(userIds: string[]): Promise<Map<string, IdentityRow[]>> {
    return this.#identities.listByUsers(userIds);
  }

  /** The identity of (provider, provider id), if any. */
  findIdentity(
    provider: string,
    providerId: string,
    q: Queryable = this.#db,
  ): Promise<IdentityRow | undefined> {
    return this.#identities.findByProviderId(provider, providerId, q);
  }

  /** Adds an identity; `provider_id` for e-mail/phone identities is the user id. */
  createIdentity(
    fields: {
      user_id: string;
      provider: string;
      provider_id: string;
      identity_data: Record<string, unknown>;
    },
    q: Queryable = this.#db,
  ): Promise<IdentityRow> {
    const email = typeof fields.identity_data.email === "string"
      ? normalizeEmail(fields.identity_data.email)
      : null;
    return this.#identities.create({ ...fields, email }, q);
  }

  /** A sign-in through identity `id`: the provider's current data, signed in at `at`. */
  async touchIdentity(
    id: string,
    data: Record<string, unknown>,
    at: Date,
    q: Queryable = this.#db,
  ): Promise<void> {
    const email = typeof data.email === "string" ? data.email : null;
    await this.#identities.recordSignIn(id, data, email, at, q);
  }

  deleteIdentity(id: string, q: Queryable = this.#db): Promise<void> {
    return this.#identities.delete(id, q);
  }

  /** Removes the user's identities of providers other than `keepProviders`. */
  deleteIdentitiesExcept(userId: string, keepProviders: string[], q: Queryable): Promise<void> {
    return this.#identities.deleteAllExcept(userId, keepProviders, q);
  }

  /** Adds a provider to raw_app_meta_data.providers (and sets provider when unset). */
  addProvider(userId: string, provider: string, q: Queryable = this.#db): Promise<void> {
    return this.#users.addProvider(userId, provider, q);
  }

  /**
   * The user's profile revision and whether session `sessionId` exists (false for null); null
   * when the user does not exist. One primary-key lookup.
   */
  profileRevision(userId: string, sessionId: string | null): Promise<ProfileRevision | null> {
    return this.#profiles.revision(userId, sessionId);
  }

  /** The user, its identities and MFA factors (`F`: the factor row) in one read. */
  profile<F>(userId: string, sessionId: string | null): Promise<Profile<F> | null> {
    return this.#profiles.read<F>(userId, sessionId);
  }
}

/** A copy of `fields` with the e-mail address in its canonical form. */
function withNormalEmail(fields: UserFields): UserFields {
  return typeof fields.email === "string"
    ? { ...fields, email: normalizeEmail(fields.email) }
    : { ...fields };
}

/** identity_data of an `email` or `phone` identity, as GoTrue writes it. */
export function localIdentityData(
  user: UserRow,
  provider: LocalProvider,
): Record<string, unknown> {
  const data: Record<string, unknown> = { sub: user.id };
  if (provider === "email") data.email = user.email ?? "";
  else data.phone = user.phone ?? "";
  data.email_verified = provider === "email" && !!user.email_confirmed_at;
  data.phone_verified = provider === "phone" && !!user.phone_confirmed_at;
  return data;
}

/** An identity as auth-js reads it. */
export function identityToJson(i: IdentityRow): Record<string, unknown> {
  return {
    identity_id: i.id,
    id: i.provider_id,
    user_id: i.user_id,
    identity_data: { ...i.identity_data },
    provider: i.provider,
    email: i.email ?? undefined,
    last_sign_in_at: ts(i.last_sign_in_at),
    created_at: ts(i.created_at),
    updated_at: ts(i.updated_at),
  };
}

function put(o: Record<string, unknown>, k: string, v: unknown): void {
  if (v !== undefined) o[k] = v;
}

/** A user as the contract shapes it (auth-js `User`). */
export function userToJson(
  u: Omit<UserRow, "encrypted_password" | "email_change_confirm_status" | "deleted_at">,
  extra: { identities?: IdentityRow[]; factors?: Record<string, unknown>[] } = {},
): Record<string, unknown> {
  // Keys whose value is undefined are left out as they are added (not deleted afterwards: a
  // deleted key turns the object into a slow dictionary for JSON.stringify).
  const out: Record<string, unknown> = {
    id: u.id,
    aud: u.aud,
    role: u.role,
    email: u.email ?? "",
  };
  put(out, "email_confirmed_at", ts(u.email_confirmed_at));
  out.phone = u.phone ?? "";
  put(out, "phone_confirmed_at", ts(u.phone_confirmed_at));
  put(out, "confirmation_sent_at", ts(u.confirmation_sent_at));
  put(out, "confirmed_at", ts(u.email_confirmed_at ?? u.phone_confirmed_at));
  put(out, "recovery_sent_at", ts(u.recovery_sent_at));
  put(out, "email_change_sent_at", ts(u.email_change_sent_at));
  put(out, "new_email", u.email_change || undefined);
  put(out, "phone_change_sent_at", ts(u.phone_change_sent_at));
  put(out, "new_phone", u.phone_change || undefined);
  put(out, "invited_at", ts(u.invited_at));
  put(out, "reauthentication_sent_at", ts(u.reauthentication_sent_at));
  put(out, "last_sign_in_at", ts(u.last_sign_in_at));
  out.app_metadata = { ...u.raw_app_meta_data };
  out.user_metadata = { ...u.raw_user_meta_data };
  out.identities = (extra.identities ?? []).map(identityToJson);
  put(out, "created_at", ts(u.created_at));
  put(out, "updated_at", ts(u.updated_at));
  put(out, "is_anonymous", u.is_anonymous);
  if (u.banned_until) out.banned_until = ts(u.banned_until);
  if (extra.factors) out.factors = extra.factors;
  return out;
}
