/**
 * GitHub OAuth apps: the `user:email` scope (the profile is public), client id
 * and secret in the token request (JSON answer because we send
 * `Accept: application/json`), PKCE (S256), the user from `GET /user` and the
 * addresses with `primary` / `verified` from `GET /user/emails`.
 * EXTERNAL_GITHUB_URL points at GitHub Enterprise Server (API under /api/v3).
 * Docs: docs.github.com/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps,
 * docs.github.com/rest/users/emails
 */
import { getJson, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const github: ProviderSpec = {
  name: "github",
  endpoints(url) {
    const auth = chooseBase(url, "https://github.com");
    return {
      authorize: `${auth}/login/oauth/authorize`,
      token: `${auth}/login/oauth/access_token`,
      api: url ? `${auth}/api/v3` : "https://api.github.com",
    };
  },
  scopes: ["user:email"],
  authScheme: "request_body",
  pkce: true,
  async fetchUser(ctx) {
    const headers = { Accept: "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28" };
    const u = await getJson(ctx, `${ctx.endpoints.api}/user`, { headers });
    const emails = await getJson<Record<string, unknown>[]>(
      ctx,
      `${ctx.endpoints.api}/user/emails`,
      { headers },
    );
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: (Array.isArray(emails) ? emails : []).filter((e) => str(e.email)).map((e) => ({
        email: String(e.email),
        verified: e.verified === true,
        primary: e.primary === true,
      })),
      name: str(u.name) ?? str(u.login),
      avatarUrl: str(u.avatar_url),
      userName: str(u.login),
    };
  },
};
