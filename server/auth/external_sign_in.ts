/**
 * The end of an external provider's redirect flow (GET/POST /callback) once
 * the provider answered: the account decision (auth/accounts.ts), a link to
 * the user who started linking (auth/identities.ts), and what the browser
 * takes back: a PKCE flow's auth code, a session, or (an implicit link)
 * nothing. Also the unlinking of an identity (DELETE /user/identities/<id>).
 */
import type { Domain, RequestMeta } from "./deps.ts";
import { signInUser } from "./accounts.ts";
import { checkLinkable, linkIdentity, unlinkIdentity } from "./identities.ts";
import { createFlowState, issueAuthCode, type PkceParams } from "./pkce.ts";
import type { TokenSet } from "./sessions.ts";
import type { UserRow } from "./users.ts";
import type { ProviderName } from "../config/mod.ts";
import type { ProviderUser } from "../providers/types.ts";

/** What the provider gave for one finished redirect flow. */
export interface ProviderSignIn {
  provider: ProviderName;
  user: ProviderUser;
  emailOptional: boolean;
  accessToken: string;
  refreshToken?: string;
  /** The user who started linking, or null for a sign-in. */
  linkUserId: string | null;
  /** The flow's PKCE challenge, when it has one. */
  pkce?: PkceParams;
  /** Where the browser goes back to (a new user's confirmation mail names it). */
  redirectTo: string;
}

/** What the browser takes back. */
export type ProviderSignInOutcome =
  | { code: string }
  | { set: TokenSet }
  | { linked: UserRow };

/** Completes a provider's redirect flow (see the top of this file). */
export async function completeProviderSignIn(
  d: Domain,
  r: ProviderSignIn,
  meta: RequestMeta,
): Promise<ProviderSignInOutcome> {
  const ip = meta.ip;
  const name = r.provider;
  let user: UserRow;
  if (r.linkUserId && r.pkce) {
    // PKCE: the link is made at the code exchange, for the holder of the code_verifier
    // (the browser that started linking). Finished in anyone else's browser (a link
    // URL sent to a victim), the code lands where no verifier is: nothing is linked.
    user = await checkLinkable(d, r.linkUserId, name, r.user);
  } else if (r.linkUserId) {
    // Implicit flow (auth-js's default): linked here, as GoTrue does, without a session
    // (below). See docs/security.md: the PKCE flow is the one to use for linking.
    user = await linkIdentity(d, r.linkUserId, name, r.user, ip);
    await d.mailer.notify("identity_linked", user, { Provider: name });
  } else {
    const outcome = await signInUser(d, name, r.user, {
      emailOptional: r.emailOptional,
      ip,
      redirectTo: r.redirectTo,
    });
    user = outcome.user;
    if (outcome.linkedByEmail) {
      await d.mailer.notify("identity_linked", user, { Provider: name });
    }
  }
  if (r.pkce) {
    const flow = await createFlowState(d.db, {
      ...r.pkce,
      authenticationMethod: "oauth",
      providerType: name,
      providerAccessToken: r.accessToken,
      providerRefreshToken: r.refreshToken,
      linkIdentity: r.linkUserId ? { provider: name, user: r.user } : undefined,
    });
    return { code: await issueAuthCode(d.db, d.clock, flow.id, user.id) };
  }
  // A link without PKCE hands out no session: whoever finishes a link URL (leaked, or
  // sent to someone) must not receive a session of the account being linked. The app
  // keeps the session it has and sees the new identity at its next GET /user.
  if (r.linkUserId) return { linked: user };
  const set = await d.sessions.issue(user, {
    method: "oauth",
    provider: name,
    ip,
    userAgent: meta.userAgent?.slice(0, 500),
  });
  d.events.emit("signin", { method: "oauth", provider: name });
  return { set };
}

/** Unlinks one of the user's identities; the notification goes to the address they had. */
export async function unlinkOwnIdentity(
  d: Domain,
  user: UserRow,
  identityId: string,
  meta: RequestMeta,
): Promise<void> {
  const { user: updated, identity } = await unlinkIdentity(d, user, identityId, meta.ip);
  await d.mailer.notify("identity_unlinked", { ...updated, email: user.email }, {
    Provider: identity.provider,
  });
}
