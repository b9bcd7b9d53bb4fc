/**
 * GET /user: the caller's user as auth-js reads it (the user row, its
 * identities and its MFA factors), kept per user together with the profile
 * revision it was built at (migrations/0009_profile_rev.sql: every committed
 * change of the user row, an identity or a factor gives the user a revision
 * no other state of it has had).
 *
 * A user with a kept answer costs one primary-key lookup per request (the
 * revision and whether the token's session exists); the kept answer is sent
 * while the revision is the same. Otherwise (nothing kept, or the user changed)
 * one statement reads the user, the identities, the factors, the revision and
 * the session, and the answer is built here by the one serializer
 * (auth/users.ts userToJson). So every request still sees the database as it
 * is: a change made through any server process shows at the next request, a
 * signed-out session or a deleted user is refused at once.
 *
 * Errors and their order are requireUser's (context.ts): bad_jwt (the
 * route's `jwt` middleware), user_not_found, user_banned (auth/ban.ts: a
 * token issued before the ban opens nothing), session_not_found.
 */
import { refuseBanned } from "../auth/ban.ts";
import type { AccessClaims } from "../auth/jwt.ts";
import type { FactorRow } from "../auth/mfa.ts";
import { factorToJson } from "../auth/mfa.ts";
import { type Profile, type ProfileRevision, userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { claimsOf, type Ctx } from "./context.ts";
import { ApiError } from "./errors.ts";
import { isUuid } from "./input.ts";

/** Characters of kept answers per user the cache may hold on average (`max` × this in all). */
export const PROFILE_CHARS_PER_USER = 2048;

/**
 * Kept GET /user answers by user id, each with the revision it was built at.
 * Bounded twice: at most `max` users, and at most `max` × PROFILE_CHARS_PER_USER
 * characters of answers in all (a user's metadata may be 16 kB, so a count
 * alone would let a few thousand large profiles hold hundreds of MiB); an answer
 * larger than that is built every time. The oldest kept goes first.
 */
export class ProfileCache {
  readonly #entries = new Map<string, { rev: number; body: string }>();
  #chars = 0;
  /** The characters the kept answers may take in all. */
  readonly maxChars: number;

  /** `max`: how many users' answers are kept (AUTHSVC_API_USER_CACHE_SIZE). */
  constructor(readonly max: number) {
    this.maxChars = max * PROFILE_CHARS_PER_USER;
  }

  get(userId: string): { rev: number; body: string } | undefined {
    return this.#entries.get(userId);
  }

  set(userId: string, rev: number, body: string): void {
    this.delete(userId); // a re-kept user moves to the back
    if (this.max <= 0 || body.length > this.maxChars) return;
    this.#entries.set(userId, { rev, body });
    this.#chars += body.length;
    while (this.#entries.size > this.max || this.#chars > this.maxChars) {
      this.delete(this.#entries.keys().next().value!);
    }
  }

  delete(userId: string): void {
    const e = this.#entries.get(userId);
    if (!e) return;
    this.#entries.delete(userId);
    this.#chars -= e.body.length;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Characters of the kept answers. */
  get chars(): number {
    return this.#chars;
  }
}

const caches = new WeakMap<Services, ProfileCache>();

function cacheOf(s: Services): ProfileCache {
  let cache = caches.get(s);
  if (!cache) {
    cache = new ProfileCache(s.config.api.userCacheSize);
    caches.set(s, cache);
  }
  return cache;
}

/** The kept answers of a server (tests read their number). */
export function profileCache(s: Services): ProfileCache {
  return cacheOf(s);
}

/** The user_not_found, user_banned and session_not_found refusals, in that order (requireUser's). */
function refuse(
  cache: ProfileCache,
  userId: string,
  row: ProfileRevision | null,
  sid: string | null,
  now: Date,
): asserts row is ProfileRevision {
  if (!row) {
    cache.delete(userId);
    throw new ApiError(403, "user_not_found", "User from sub claim in JWT does not exist");
  }
  refuseBanned(row, now);
  if (sid !== null && !row.session) {
    throw new ApiError(
      403,
      "session_not_found",
      "Session from session_id claim in JWT does not exist",
    );
  }
}

/** The answer GET /user gives for a profile read from the four tables. */
export function profileBody(p: Profile<FactorRow>): string {
  return JSON.stringify(userToJson(p.user, {
    identities: p.identities,
    factors: p.factors.length ? p.factors.map(factorToJson) : undefined,
  }));
}

/** GET /user's answer for the bearer token the route's `jwt` middleware verified. */
export async function userProfileResponse(c: Ctx, s: Services): Promise<Response> {
  return c.body(await userProfileText(s, claimsOf(c)), 200, JSON_TYPE);
}

/**
 * The text of GET /user's answer for verified `claims` (the route's handler); user_not_found
 * and session_not_found as ApiErrors.
 */
export async function userProfileText(s: Services, claims: AccessClaims): Promise<string> {
  const sid = typeof claims.session_id === "string" && claims.session_id ? claims.session_id : null;
  const sidParam = sid !== null && isUuid(sid) ? sid : null;
  const cache = cacheOf(s);
  const kept = cache.get(claims.sub);
  if (kept) {
    // One primary-key lookup: the revision and the session.
    const r = await s.users.profileRevision(claims.sub, sidParam);
    refuse(cache, claims.sub, r, sid, s.clock.now());
    if (r.rev === kept.rev) return kept.body;
  }
  // Nothing kept, or the user changed: one statement reads everything the answer holds.
  const p = await s.users.profile<FactorRow>(claims.sub, sidParam);
  refuse(cache, claims.sub, p, sid, s.clock.now());
  const body = profileBody(p);
  cache.set(claims.sub, p.rev, body);
  return body;
}

const JSON_TYPE = { "content-type": "application/json" };
