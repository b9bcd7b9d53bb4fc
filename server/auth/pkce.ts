/**
 * PKCE flow state for e-mail links and external providers (`flow_state`).
 *
 * 1. A request that starts a flow carries `code_challenge` and
 *    `code_challenge_method` (`s256` or `plain`, any case):
 *      const flow = await createFlowState(s.db, { codeChallenge, codeChallengeMethod,
 *        authenticationMethod: "magiclink", userId });
 *    (`readPkceParams(body)` reads and validates both members; undefined when absent.)
 * 2. When the user comes back (a verified link, a provider callback), an auth
 *    code is issued on the flow and put in the redirect as `?code=`:
 *      const code = await issueAuthCode(s.db, s.clock, flow.id, user.id);
 * 3. The client exchanges it at `POST /token?grant_type=pkce` with
 *    `auth_code` and `code_verifier`: `exchangeAuthCode(s, authCode, verifier)`
 *    checks the verifier against the challenge in constant time, consumes the
 *    flow (single use), and issues a session; provider tokens stored on the
 *    flow come back as `provider_token` / `provider_refresh_token`.
 *
 * Only a hash of the auth code is stored. A flow expires FLOW_STATE_TTL_SEC
 * after the code is issued (GoTrue: 5 minutes) and a never-used flow after a
 * day (or MAILER_OTP_EXP, when longer: its link may still come back). Every
 * exchange prunes such flows, at most every 10 minutes per process.
 */
import { ApiError, badRequest } from "../api/errors.ts";
import type { Body } from "../api/input.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { sha256Base64url, sha256Hex, timingSafeEqual } from "./crypto.ts";
import type { TokenSet } from "./sessions.ts";
import type { Services } from "../services.ts";

/** Seconds an issued auth code stays exchangeable. */
export const FLOW_STATE_TTL_SEC = 300;
const UNUSED_FLOW_TTL_SEC = 86_400;

/** A flow_state row. */
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
  created_at: Date;
  updated_at: Date;
}

/** Validated PKCE parameters of a request. */
export interface PkceParams {
  codeChallenge: string;
  codeChallengeMethod: "s256" | "plain";
}

const CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * Reads `code_challenge` / `code_challenge_method` from a body: undefined when
 * no challenge is given, 400 naming the member when one is malformed.
 */
export function readPkceParams(body: Body): PkceParams | undefined {
  const ch = body.code_challenge;
  const m = body.code_challenge_method;
  const noChallenge = ch === undefined || ch === null || ch === "";
  const noMethod = m === undefined || m === null || m === "";
  if (noChallenge !== noMethod) {
    // GoTrue's validatePKCEParams: one without the other is refused
    throw badRequest("PKCE flow requires code_challenge_method and code_challenge");
  }
  if (noChallenge) return undefined;
  if (typeof ch !== "string" || !CHALLENGE.test(ch)) {
    throw badRequest(
      "code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'",
    );
  }
  const method = typeof m === "string" ? m.toLowerCase() : m === undefined || m === null ? "" : 0;
  if (method !== "s256" && method !== "plain") {
    throw badRequest("code_challenge_method must be s256 or plain");
  }
  return { codeChallenge: ch, codeChallengeMethod: method };
}

/** Starts a flow. */
export async function createFlowState(
  db: Db,
  o: PkceParams & {
    authenticationMethod: string;
    userId?: string | null;
    providerType?: string;
    providerAccessToken?: string;
    providerRefreshToken?: string;
  },
  q: Queryable = db,
): Promise<FlowStateRow> {
  const [row] = await q.query<FlowStateRow>(
    `INSERT INTO ${db.t("flow_state")} (user_id, code_challenge, code_challenge_method,
       authentication_method, provider_type, provider_access_token, provider_refresh_token)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [
      o.userId ?? null,
      o.codeChallenge,
      o.codeChallengeMethod,
      o.authenticationMethod,
      o.providerType ?? "",
      o.providerAccessToken ?? null,
      o.providerRefreshToken ?? null,
    ],
  );
  return row;
}

/**
 * Runs `send` with a new flow state when `o` is given (PKCE), else without
 * one. When `send` throws (a refused mail: limit, bad redirect, SMTP), the
 * flow state is removed again, so a request answered with an error leaves
 * no row behind.
 */
export async function withFlowState<T>(
  db: Db,
  o: Parameters<typeof createFlowState>[1] | undefined,
  send: (flowStateId: string | undefined) => Promise<T>,
): Promise<T> {
  if (!o) return await send(undefined);
  const flow = await createFlowState(db, o);
  try {
    return await send(flow.id);
  } catch (e) {
    await db.query(`DELETE FROM ${db.t("flow_state")} WHERE id = $1`, [flow.id]);
    throw e;
  }
}

/** Stores provider tokens on a flow (external providers, after the callback). */
export async function setFlowProviderTokens(
  db: Db,
  flowId: string,
  tokens: { accessToken?: string; refreshToken?: string },
): Promise<void> {
  await db.query(
    `UPDATE ${db.t("flow_state")} SET provider_access_token = $2, provider_refresh_token = $3,
       updated_at = now() WHERE id = $1`,
    [flowId, tokens.accessToken ?? null, tokens.refreshToken ?? null],
  );
}

/** Issues the auth code of a flow for `userId`; returns the code for `?code=`. */
export async function issueAuthCode(
  db: Db,
  clock: Clock,
  flowId: string,
  userId: string,
): Promise<string> {
  const code = crypto.randomUUID();
  const rows = await db.query(
    `UPDATE ${db.t("flow_state")} SET auth_code_hash = $2, auth_code_issued_at = $3, user_id = $4,
       updated_at = $3 WHERE id = $1 RETURNING id`,
    [flowId, await sha256Hex(code), clock.now(), userId],
  );
  if (!rows.length) {
    throw new ApiError(
      404,
      "flow_state_not_found",
      "invalid flow state, no valid flow state found",
    );
  }
  return code;
}

/**
 * The `pkce` grant: checks `code_verifier` against the flow of `authCode`,
 * consumes the flow and issues a session.
 */
export async function exchangeAuthCode(
  s: Services,
  authCode: string,
  codeVerifier: string,
): Promise<TokenSet> {
  if (!authCode) throw badRequest("auth_code is required");
  if (!codeVerifier) throw badRequest("code_verifier is required");
  if (authCode.length > 200 || codeVerifier.length > 200) {
    throw new ApiError(
      404,
      "flow_state_not_found",
      "invalid flow state, no valid flow state found",
    );
  }
  const db = s.db;
  await pruneOccasionally(s);
  const [flow] = await db.query<FlowStateRow>(
    `DELETE FROM ${db.t("flow_state")} WHERE auth_code_hash = $1 RETURNING *`,
    [await sha256Hex(authCode)],
  );
  if (!flow || !flow.user_id || !flow.auth_code_issued_at) {
    throw new ApiError(
      404,
      "flow_state_not_found",
      "invalid flow state, no valid flow state found",
    );
  }
  const now = s.clock.now().getTime();
  if (now - new Date(flow.auth_code_issued_at).getTime() > FLOW_STATE_TTL_SEC * 1000) {
    throw new ApiError(400, "flow_state_expired", "Flow state has expired");
  }
  const expected = flow.code_challenge_method === "s256"
    ? await sha256Base64url(codeVerifier)
    : codeVerifier;
  if (!timingSafeEqual(expected, flow.code_challenge)) {
    throw new ApiError(
      400,
      "bad_code_verifier",
      "code challenge does not match previously saved code verifier",
    );
  }
  const user = await s.users.findById(flow.user_id);
  if (!user) throw new ApiError(404, "user_not_found", "User not found");
  if (user.banned_until && new Date(user.banned_until).getTime() > now) {
    throw new ApiError(400, "user_banned", "User is banned");
  }
  const set = await s.sessions.issue(user, {
    method: flow.authentication_method,
    provider: flow.provider_type || undefined,
  });
  if (flow.provider_access_token) set.provider_token = flow.provider_access_token;
  if (flow.provider_refresh_token) set.provider_refresh_token = flow.provider_refresh_token;
  return set;
}

const PRUNE_EVERY_MS = 10 * 60_000;
const lastPrune = new WeakMap<Db, number>();

async function pruneOccasionally(s: Services): Promise<void> {
  const now = s.clock.now().getTime();
  if (now - (lastPrune.get(s.db) ?? 0) < PRUNE_EVERY_MS) return;
  lastPrune.set(s.db, now);
  await pruneFlowStates(s.db, s.clock, Math.max(UNUSED_FLOW_TTL_SEC, s.config.mailer.otpExp))
    .catch(() => {});
}

/**
 * Deletes flows whose code expired or that were never used within
 * `unusedTtlSec` (housekeeping).
 */
export async function pruneFlowStates(
  db: Db,
  clock: Clock,
  unusedTtlSec = UNUSED_FLOW_TTL_SEC,
): Promise<void> {
  const now = clock.now().getTime();
  await db.query(
    `DELETE FROM ${
      db.t("flow_state")
    } WHERE (auth_code_issued_at IS NOT NULL AND auth_code_issued_at < $1)
       OR created_at < $2`,
    [new Date(now - FLOW_STATE_TTL_SEC * 1000), new Date(now - unusedTtlSec * 1000)],
  );
}
