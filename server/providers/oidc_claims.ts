/** Mapping of standard OpenID Connect claims to a provider user. */
import { str, truthy } from "./http.ts";
import type { ProviderUser } from "./types.ts";

/** sub, email, email_verified, name, picture, preferred_username of an ID token or userinfo answer. */
export function userFromClaims(
  claims: Record<string, unknown>,
  issuer: string,
  opts: { emailVerified?: boolean } = {},
): ProviderUser {
  const email = str(claims.email);
  const name = str(claims.name) ??
    ([str(claims.given_name), str(claims.family_name)].filter(Boolean).join(" ") || undefined);
  return {
    id: String(claims.sub ?? ""),
    issuer: str(claims.iss) ?? issuer,
    emails: email
      ? [{ email, verified: opts.emailVerified ?? truthy(claims.email_verified), primary: true }]
      : [],
    name,
    avatarUrl: str(claims.picture),
    userName: str(claims.preferred_username),
  };
}
