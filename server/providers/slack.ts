/**
 * Sign in with Slack (OpenID Connect): `openid profile email`, client id and
 * secret in the token request (Slack answers errors with status 200 and
 * `{"ok": false, "error": ...}`, which the client library raises as an
 * OAuthError), the user from the verified ID token (keys at
 * `https://slack.com/openid/connect/keys`, issuer `https://slack.com`) with
 * `email_verified`, and the team id kept as a custom claim.
 * Docs: api.slack.com/authentication/sign-in-with-slack
 */
import { getJson, str } from "./http.ts";
import { userFromClaims } from "./oidc_claims.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const slack: ProviderSpec = {
  name: "slack",
  endpoints(url) {
    const base = chooseBase(url, "https://slack.com");
    return {
      authorize: `${base}/openid/connect/authorize`,
      token: `${base}/api/openid.connect.token`,
      api: `${base}/api/openid.connect.userInfo`,
      idToken: { jwksUri: `${base}/openid/connect/keys`, issuer: base },
    };
  },
  scopes: ["openid", "profile", "email"],
  authScheme: "request_body",
  pkce: false,
  async fetchUser(ctx) {
    const claims = ctx.idClaims ?? await getJson<Record<string, unknown>>(ctx, ctx.endpoints.api);
    const user = userFromClaims(claims, "https://slack.com");
    const team = str(claims["https://slack.com/team_id"]);
    if (team) user.customClaims = { "https://slack.com/team_id": team };
    return user;
  },
};
