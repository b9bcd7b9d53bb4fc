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
 *    checks the verifier against the challenge in constant time, then
 *    consumes the flow (single use; a wrong verifier leaves it), and issues a
 *    session; provider tokens stored on the flow come back as
 *    `provider_token` / `provider_refresh_token`.
 *
 * Only a hash of the auth code is stored. A flow expires FLOW_STATE_TTL_SEC
 * after the code is issued (GoTrue: 5 minutes) and a never-used flow after a
 * day (or MAILER_OTP_EXP, when longer: its link may still come back). Every
 * exchange prunes such flows, at most every 10 minutes per process.
 */
import { refuseBanned } from "./ban.ts";
import { AuthError, invalid } from "./errors.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { sha256Base64url, sha256Hex, timingSafeEqual } from "../util/crypto.ts";
import type { TokenSet } from "./sessions.ts";
import type { Domain } from "./deps.ts";
import { type FlowStateRow, FlowStateStore, UNUSED_FLOW_TTL_SEC } from "../store/flow_states.ts";

export type { FlowStateRow } from "../store/flow_states.ts";
import type { ProviderName } from "../config/mod.ts";
import type { ProviderUser } from "../providers/types.ts";
import { linkIdentity } from "./identities.ts";

/** Seconds an issued auth code stays exchangeable. */
export const FLOW_STATE_TTL_SEC = 300;

const stores = new WeakMap<Db, FlowStateStore>();

/** The flow_state store of `db`. */
function flows(db: Db): FlowStateStore {
  let store = stores.get(db);
  if (!store) stores.set(db, store = new FlowStateStore(db));
  return store;
}

/**
 * A provider identity the callback read for a link in the PKCE flow: linked
 * to the flow's user only by the exchange, i.e. for the holder of the
 * code_verifier (the browser that started linking), never by whoever's
 * browser finished the provider sign-in.
 */
export interface PendingLink {
  provider: ProviderName;
  user: ProviderUser;
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
export function readPkceParams(body: Record<string, unknown>): PkceParams | undefined {
  const ch = body.code_challenge;
  const m = body.code_challenge_method;
  const noChallenge = ch === undefined || ch === null || ch === "";
  const noMethod = m === undefined || m === null || m === "";
  if (noChallenge !== noMethod) {
    // GoTrue's validatePKCEParams: one without the other is refused
    throw invalid("PKCE flow requires code_challenge_method and code_challenge", "oauth");
  }
  if (noChallenge) return undefined;
  if (typeof ch !== "string" || !CHALLENGE.test(ch)) {
    throw invalid(
      "code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'",
      "oauth",
    );
  }
  const method = typeof m === "string" ? m.toLowerCase() : m === undefined || m === null ? "" : 0;
  if (method !== "s256" && method !== "plain") {
    throw invalid("code_challenge_method must be s256 or plain", "oauth");
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
    linkIdentity?: PendingLink;
  },
  q: Queryable = db,
): Promise<FlowStateRow> {
  return await flows(db).insert({
    userId: o.userId ?? null,
    codeChallenge: o.codeChallenge,
    codeChallengeMethod: o.codeChallengeMethod,
    authenticationMethod: o.authenticationMethod,
    providerType: o.providerType ?? "",
    providerAccessToken: o.providerAccessToken ?? null,
    providerRefreshToken: o.providerRefreshToken ?? null,
    linkIdentity: (o.linkIdentity ?? null) as Record<string, unknown> | null,
  }, q);
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
    await flows(db).deleteById(flow.id);
    throw e;
  }
}

/** Issues the auth code of a flow for `userId`; returns the code for `?code=`. */
export async function issueAuthCode(
  db: Db,
  clock: Clock,
  flowId: string,
  userId: string,
): Promise<string> {
  const code = crypto.randomUUID();
  const found = await flows(db).setAuthCode(flowId, sha256Hex(code), userId, clock.now());
  if (!found) {
    throw new AuthError("flow_state_not_found", "invalid flow state, no valid flow state found");
  }
  return code;
}

function flowStateNotFound(): AuthError {
  return new AuthError("flow_state_not_found", "invalid flow state, no valid flow state found");
}

/**
 * The `pkce` grant: checks `code_verifier` against the flow of `authCode`
 * and only then consumes the flow (single use) and issues a session, as
 * GoTrue's token.go does: a wrong verifier (400 bad_code_verifier), an
 * expired code or a banned user leave the flow as it was, so whoever sees
 * the code in a URL cannot cancel the sign-in of the browser that holds the
 * verifier. Attempts are bounded by the code's life (FLOW_STATE_TTL_SEC),
 * the per-client limit of POST /token and the verifier itself (at least 43
 * characters a client draws at random, RFC 7636 section 4.1): no count of
 * wrong attempts kills the flow, which would give that cancel back. A flow
 * that carries a pending identity link links it first (422
 * identity_already_exists when someone linked that provider account
 * meanwhile); `ip` goes to its audit entry.
 */
export async function exchangeAuthCode(
  s: Domain,
  authCode: string,
  codeVerifier: string,
  ip = "",
): Promise<TokenSet> {
  if (!authCode) throw invalid("auth_code is required", "oauth");
  if (!codeVerifier) throw invalid("code_verifier is required", "oauth");
  if (authCode.length > 200 || codeVerifier.length > 200) throw flowStateNotFound();
  const db = s.db;
  await pruneOccasionally(s);
  const codeHash = sha256Hex(authCode);
  const flow = await flows(db).findByCodeHash(codeHash);
  if (!flow || !flow.user_id || !flow.auth_code_issued_at) throw flowStateNotFound();
  const now = s.clock.now().getTime();
  if (now - new Date(flow.auth_code_issued_at).getTime() > FLOW_STATE_TTL_SEC * 1000) {
    // GoTrue's answer (token.go PKCE grant), 422 in STATUS
    throw new AuthError("flow_state_expired", "invalid flow state, flow state has expired");
  }
  const expected = flow.code_challenge_method === "s256"
    ? sha256Base64url(codeVerifier)
    : codeVerifier;
  if (!timingSafeEqual(expected, flow.code_challenge)) {
    throw new AuthError(
      "bad_code_verifier",
      "code challenge does not match previously saved code verifier",
    );
  }
  let user = await s.users.findById(flow.user_id);
  if (!user) throw new AuthError("user_not_found", "User not found");
  refuseBanned(user, new Date(now), "oauth");
  // Every check passed: only now is the code used up, once (a concurrent exchange that
  // used it first leaves nothing here).
  if (!await flows(db).consume(flow.id, codeHash)) throw flowStateNotFound();
  const link = flow.link_identity as PendingLink | null;
  if (link) {
    // The verifier matched: this is the browser that started linking. Only now is the
    // provider identity linked (the callback only read it).
    user = await linkIdentity(s, user.id, link.provider, link.user, ip);
    await s.mailer.notify("identity_linked", user, { Provider: link.provider });
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

async function pruneOccasionally(s: Domain): Promise<void> {
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
  await flows(db).deleteStale(
    new Date(now - FLOW_STATE_TTL_SEC * 1000),
    new Date(now - unusedTtlSec * 1000),
  );
}
