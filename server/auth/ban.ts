/**
 * The ban check: one rule for every path that signs a user in, issues or
 * refreshes tokens, verifies a code or link, links an identity, or serves a
 * request with the user's token (GET /user and the `user` guard included).
 * A user is banned while `banned_until` lies after now (the service clock);
 * the answer is GoTrue's 403 `user_banned` "User is banned", 400 where a token
 * grant refuses it (`situation: "oauth"`, RFC 6749 section 5.2).
 */
import { AuthError } from "./errors.ts";

/** What the check reads of a user. */
export interface Bannable {
  banned_until: Date | string | null;
}

/** True while `user` is banned at `now`. */
export function isBanned(user: Bannable, now: Date): boolean {
  return !!user.banned_until && new Date(user.banned_until).getTime() > now.getTime();
}

/** GoTrue's answer to a banned user (`"oauth"`: refusing a token grant, 400). */
export function bannedError(situation?: "oauth"): AuthError {
  return situation === "oauth"
    ? new AuthError("user_banned", "User is banned", { situation: "oauth" })
    : new AuthError("user_banned", "User is banned");
}

/** Throws user_banned while `user` is banned at `now`. */
export function refuseBanned(user: Bannable, now: Date, situation?: "oauth"): void {
  if (isBanned(user, now)) throw bannedError(situation);
}
