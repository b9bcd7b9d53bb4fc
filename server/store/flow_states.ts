/**
 * Flows that span a redirect: `flow_state` (PKCE, auth/pkce.ts) and
 * `oauth_state_uses` (the used OAuth states of external sign-ins,
 * auth/oauth_state.ts). Only a hash of an auth code is stored.
 */
import type { Db, Queryable } from "../db/db.ts";

/** A flow_state row. */
/** Seconds an unused flow (no auth code issued yet) is kept (auth/pkce.ts, auth/cleanup.ts). */
export const UNUSED_FLOW_TTL_SEC = 86_400;

export interface FlowStateRow {
  id: string;
  user_id: string | null;
  auth_code_hash: string | null;
  code_challenge: string;
  code_challenge_method: "s256" | "plain";
  authentication_method: string;
  provider_type: string;
  provider_access_token: string | null;
  provider_refresh_token: string | null;
  auth_code_issued_at: Date | null;
  /**
   * A provider identity to link to `user_id` at the code exchange (identity
   * linking in the PKCE flow; auth/pkce.ts `PendingLink`), or null.
   */
  link_identity: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

/** What a new flow starts with. */
export interface NewFlowState {
  userId: string | null;
  codeChallenge: string;
  codeChallengeMethod: "s256" | "plain";
  authenticationMethod: string;
  providerType: string;
  providerAccessToken: string | null;
  providerRefreshToken: string | null;
  /** A pending identity link (auth/pkce.ts `PendingLink`). */
  linkIdentity?: Record<string, unknown> | null;
}

/** PKCE flow states of one database. */
export class FlowStateStore {
  readonly #db: Db;
  readonly #flows: string;

  constructor(db: Db) {
    this.#db = db;
    this.#flows = db.t("flow_state");
  }

  async insert(f: NewFlowState, q: Queryable = this.#db): Promise<FlowStateRow> {
    const [row] = await q.query<FlowStateRow>(
      `INSERT INTO ${this.#flows} (user_id, code_challenge, code_challenge_method,
         authentication_method, provider_type, provider_access_token, provider_refresh_token,
         link_identity)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [
        f.userId,
        f.codeChallenge,
        f.codeChallengeMethod,
        f.authenticationMethod,
        f.providerType,
        f.providerAccessToken,
        f.providerRefreshToken,
        f.linkIdentity ?? null,
      ],
    );
    return row;
  }

  async deleteById(id: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#flows} WHERE id = $1`, [id]);
  }

  /** Sets the flow's auth code (its hash) and user; false when the flow does not exist. */
  async setAuthCode(
    id: string,
    codeHash: string,
    userId: string,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<boolean> {
    const rows = await q.query(
      `UPDATE ${this.#flows} SET auth_code_hash = $2, auth_code_issued_at = $3, user_id = $4,
         updated_at = $3 WHERE id = $1 RETURNING id`,
      [id, codeHash, now, userId],
    );
    return rows.length > 0;
  }

  /** The flow whose auth code hash is `codeHash`, or null. */
  async findByCodeHash(codeHash: string, q: Queryable = this.#db): Promise<FlowStateRow | null> {
    const [flow] = await q.query<FlowStateRow>(
      `SELECT * FROM ${this.#flows} WHERE auth_code_hash = $1`,
      [codeHash],
    );
    return flow ?? null;
  }

  /**
   * Deletes flow `id` while its auth code hash is still `codeHash`: true for
   * the one exchange that used it up, false for any other (single use).
   */
  async consume(id: string, codeHash: string, q: Queryable = this.#db): Promise<boolean> {
    const rows = await q.query(
      `DELETE FROM ${this.#flows} WHERE id = $1 AND auth_code_hash = $2 RETURNING id`,
      [id, codeHash],
    );
    return rows.length > 0;
  }

  /** Deletes flows whose code was issued before `codeBefore` or created before `createdBefore`. */
  async deleteStale(codeBefore: Date, createdBefore: Date, q: Queryable = this.#db): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#flows} WHERE (auth_code_issued_at IS NOT NULL AND auth_code_issued_at < $1)
         OR created_at < $2`,
      [codeBefore, createdBefore],
    );
  }
}

/** Used OAuth states (and tickets) of one database, kept until they expire. */
export class OAuthStateUseStore {
  readonly #db: Db;
  readonly #uses: string;

  constructor(db: Db) {
    this.#db = db;
    this.#uses = db.t("oauth_state_uses");
  }

  async deleteExpired(now: Date, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#uses} WHERE expires_at < $1`, [now]);
  }

  /**
   * Records `jti` as used until `expiresAt`: false when it was recorded
   * before (one INSERT, so of two processes only one succeeds).
   */
  async record(jti: string, expiresAt: Date, q: Queryable = this.#db): Promise<boolean> {
    const rows = await q.query(
      `INSERT INTO ${this.#uses} (jti, expires_at) VALUES ($1, $2)
       ON CONFLICT (jti) DO NOTHING RETURNING jti`,
      [jti, expiresAt],
    );
    return rows.length > 0;
  }
}
