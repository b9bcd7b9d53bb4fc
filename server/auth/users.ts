/**
 * Users and identities: the rows, the queries the hot paths need, and the
 * JSON shape `@supabase/auth-js` reads. E-mail addresses are stored
 * lower-cased; phones as GoTrue stores and shows them: E.164 digits without
 * the leading "+" ("15551234567").
 */
import type { Db, Queryable } from "../db/db.ts";
import { isoString } from "../util/time.ts";

/** A user row. */
export interface UserRow {
  id: string;
  aud: string;
  role: string;
  email: string | null;
  encrypted_password: string | null;
  email_confirmed_at: Date | null;
  invited_at: Date | null;
  confirmation_sent_at: Date | null;
  recovery_sent_at: Date | null;
  email_change: string | null;
  email_change_sent_at: Date | null;
  email_change_confirm_status: number;
  phone: string | null;
  phone_confirmed_at: Date | null;
  phone_change: string | null;
  phone_change_sent_at: Date | null;
  reauthentication_sent_at: Date | null;
  last_sign_in_at: Date | null;
  raw_app_meta_data: Record<string, unknown>;
  raw_user_meta_data: Record<string, unknown>;
  banned_until: Date | null;
  deleted_at: Date | null;
  is_anonymous: boolean;
  created_at: Date;
  updated_at: Date;
}

/** An identity row (one per provider account linked to a user). */
export interface IdentityRow {
  id: string;
  user_id: string;
  provider: string;
  provider_id: string;
  identity_data: Record<string, unknown>;
  email: string | null;
  last_sign_in_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Columns a caller may set when creating or updating a user. */
export type UserFields = Partial<Omit<UserRow, "id" | "created_at" | "updated_at">> & {
  id?: string;
};

const ts = (d: Date | null | undefined) =>
  d ? isoString(d instanceof Date ? d : new Date(d)) : undefined;

/**
 * The canonical form of an e-mail address, for storage and every lookup:
 * trimmed, lower case, Unicode NFC (so a composed and a decomposed "é" are one
 * address). Validation is api/input.ts's checkEmail.
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase().normalize("NFC");
}

/**
 * A phone number as stored: E.164 digits without the leading "+" (spaces,
 * dashes, dots and parentheses removed, so "+1 (555) 123-4567" is
 * "15551234567"), or null when it is not an E.164 number. The one rule of
 * every endpoint that takes a phone.
 */
export function normalizePhone(phone: string): string | null {
  // Control and format characters (a BOM or a bidi mark is "whitespace" to \s) are refused,
  // not stripped: what was typed is either a number or not.
  if (/[\p{Cc}\p{Cf}]/u.test(phone)) return null;
  const p = phone.replace(/[\s\-.()]/g, "").replace(/^\+/, "");
  return /^[1-9][0-9]{1,14}$/.test(p) ? p : null;
}

/** The identity providers a user created by e-mail or phone gets. */
export type LocalProvider = "email" | "phone";

/** Users.lockProfile for code that has the users table's name but no Users. */
export async function lockUserProfile(
  q: Queryable,
  usersTable: string,
  userId: string,
): Promise<boolean> {
  const rows = await q.query(
    `UPDATE ${usersTable} SET profile_rev = nextval('${usersTable}_profile_rev_seq')
     WHERE id = $1 AND deleted_at IS NULL RETURNING id`,
    [userId],
  );
  return rows.length > 0;
}

/** Users and identities over one database. */
export class Users {
  readonly table: string;
  readonly identities: string;
  /**
   * Asked with the user about to be created (auth/hooks_install.ts: GoTrue's
   * before_user_created hook); throwing refuses the creation. `tx` is the
   * caller's transaction, when there is one.
   */
  beforeCreate?: (user: Record<string, unknown>, tx?: Queryable) => Promise<void>;

  constructor(readonly db: Db) {
    this.table = db.t("users");
    this.identities = db.t("identities");
  }

  async findById(id: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.table} WHERE id = $1 AND deleted_at IS NULL`,
      [id],
    );
    return rows[0] ?? null;
  }

  async findByEmail(email: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.table} WHERE email = $1 AND deleted_at IS NULL`,
      [normalizeEmail(email)],
    );
    return rows[0] ?? null;
  }

  /**
   * Whether a user other than `userId` has `email`, as its address or through
   * one of its identities (GoTrue's IsDuplicatedEmail, the check of an e-mail
   * change).
   */
  async emailTakenByOther(email: string, userId: string, q: Queryable = this.db): Promise<boolean> {
    const rows = await q.query(
      `SELECT 1 FROM ${this.table} WHERE email = $1 AND deleted_at IS NULL AND id <> $2
       UNION ALL
       SELECT 1 FROM ${this.identities} i JOIN ${this.table} u ON u.id = i.user_id
        WHERE i.email = $1 AND i.user_id <> $2 AND u.deleted_at IS NULL
       LIMIT 1`,
      [normalizeEmail(email), userId],
    );
    return rows.length > 0;
  }

  async findByPhone(phone: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.table} WHERE phone = $1 AND deleted_at IS NULL`,
      [
        phone,
      ],
    );
    return rows[0] ?? null;
  }

  /**
   * Inserts a user; unique violations propagate (see isUniqueViolation).
   * `beforeCreate` is asked first unless `opts.hooks` is false (an admin's
   * POST /admin/users, as in GoTrue).
   */
  async create(
    fields: UserFields,
    q: Queryable = this.db,
    opts: { hooks?: boolean } = {},
  ): Promise<UserRow> {
    const f: Record<string, unknown> = { ...fields };
    if (typeof f.email === "string") f.email = normalizeEmail(f.email);
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
      await this.beforeCreate(userToJson(draft), q === this.db ? undefined : q);
    }
    const cols = Object.keys(f).filter((k) => f[k] !== undefined);
    const vals = cols.map((k) => jsonable(f[k]));
    const rows = await q.query<UserRow>(
      `INSERT INTO ${this.table} (${cols.join(", ")}) VALUES (${
        cols.map((_, i) => `$${i + 1}`).join(", ")
      }) RETURNING *`,
      vals,
    );
    return rows[0];
  }

  /** Updates columns of one user and returns the row (null when gone). */
  async update(id: string, fields: UserFields, q: Queryable = this.db): Promise<UserRow | null> {
    const f: Record<string, unknown> = { ...fields };
    if (typeof f.email === "string") f.email = normalizeEmail(f.email);
    const cols = Object.keys(f).filter((k) => f[k] !== undefined && k !== "id");
    const sets = cols.map((k, i) => `${k} = $${i + 2}`);
    sets.push("updated_at = now()");
    const rows = await q.query<UserRow>(
      `UPDATE ${this.table} SET ${
        sets.join(", ")
      } WHERE id = $1 AND deleted_at IS NULL RETURNING *`,
      [id, ...cols.map((k) => jsonable(f[k]))],
    );
    return rows[0] ?? null;
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
    return lockUserProfile(q, this.table, userId);
  }

  /**
   * Creates a user with its `email` and/or `phone` identities (provider_id =
   * the user id, identity_data {sub, email, email_verified, phone_verified})
   * and app_metadata {provider, providers} merged over `fields.raw_app_meta_data`.
   * Run it in a transaction; a duplicate address is a unique violation.
   */
  async createWithIdentities(
    fields: UserFields,
    providers: LocalProvider[],
    q: Queryable = this.db,
    opts: { hooks?: boolean } = {},
  ): Promise<UserRow> {
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
      return await this.db.transaction(async (tx) => {
        await this.lockProfile(user.id, tx);
        await this.syncLocalIdentity(user, provider, tx);
      });
    }
    const data = localIdentityData(user, provider);
    const rows = await q.query<{ id: string }>(
      `UPDATE ${this.identities} SET identity_data = $3, email = $4, updated_at = now()
       WHERE user_id = $1 AND provider = $2 RETURNING id`,
      [user.id, provider, JSON.stringify(data), provider === "email" ? user.email : null],
    );
    if (rows.length) return;
    await this.createIdentity(
      { user_id: user.id, provider, provider_id: user.id, identity_data: data },
      q,
    );
    await this.addProvider(user.id, provider, q);
  }

  /** Removes the user row (identities, sessions and tokens go with it). */
  async delete(id: string, q: Queryable = this.db): Promise<boolean> {
    const rows = await q.query(`DELETE FROM ${this.table} WHERE id = $1 RETURNING id`, [id]);
    return rows.length > 0;
  }

  async listIdentities(userId: string, q: Queryable = this.db): Promise<IdentityRow[]> {
    return await q.query<IdentityRow>(
      `SELECT * FROM ${this.identities} WHERE user_id = $1 ORDER BY created_at`,
      [userId],
    );
  }

  /** Adds an identity; `provider_id` for e-mail/phone identities is the user id. */
  async createIdentity(
    fields: {
      user_id: string;
      provider: string;
      provider_id: string;
      identity_data: Record<string, unknown>;
    },
    q: Queryable = this.db,
  ): Promise<IdentityRow> {
    const email = typeof fields.identity_data.email === "string"
      ? normalizeEmail(fields.identity_data.email)
      : null;
    const rows = await q.query<IdentityRow>(
      `INSERT INTO ${this.identities} (user_id, provider, provider_id, identity_data, email, last_sign_in_at)
       VALUES ($1, $2, $3, $4, $5, now()) RETURNING *`,
      [
        fields.user_id,
        fields.provider,
        fields.provider_id,
        JSON.stringify(fields.identity_data),
        email,
      ],
    );
    return rows[0];
  }

  /** Adds a provider to raw_app_meta_data.providers (and sets provider when unset). */
  // GoTrue derives providers from identities: an anonymous user's first
  // identity replaces "anonymous" (models.User.UpdateAppMetaDataProviders).
  async addProvider(userId: string, provider: string, q: Queryable = this.db): Promise<void> {
    await q.query(
      `UPDATE ${this.table} SET raw_app_meta_data =
         jsonb_set(
           CASE WHEN raw_app_meta_data ? 'provider'
                  AND raw_app_meta_data->>'provider' <> 'anonymous' THEN raw_app_meta_data
                ELSE raw_app_meta_data || jsonb_build_object('provider', $2::text) END,
           '{providers}',
           (SELECT COALESCE(jsonb_agg(DISTINCT p), '[]'::jsonb) FROM jsonb_array_elements_text(
              COALESCE(raw_app_meta_data->'providers', '[]'::jsonb) || jsonb_build_array($2::text)) AS p
            WHERE p <> 'anonymous' OR $2::text = 'anonymous')
         ),
         updated_at = now()
       WHERE id = $1`,
      [userId, provider],
    );
  }
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

function jsonable(v: unknown): unknown {
  if (v !== null && typeof v === "object" && !(v instanceof Date) && !(v instanceof Uint8Array)) {
    return JSON.stringify(v);
  }
  return v;
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
