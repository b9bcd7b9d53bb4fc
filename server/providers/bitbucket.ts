/**
 * Bitbucket Cloud OAuth 2.0: `account email` scopes, client authentication
 * with HTTP Basic, the user from `GET /2.0/user` and the addresses (with
 * `is_primary` / `is_confirmed`) from `GET /2.0/user/emails`.
 * Docs: developer.atlassian.com/cloud/bitbucket/oauth-2
 */
import { getJson, obj, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const bitbucket: ProviderSpec = {
  name: "bitbucket",
  endpoints(url) {
    const auth = chooseBase(url, "https://bitbucket.org");
    return {
      authorize: `${auth}/site/oauth2/authorize`,
      token: `${auth}/site/oauth2/access_token`,
      api: `${chooseBase(url, "https://api.bitbucket.org")}/2.0`,
    };
  },
  scopes: ["account", "email"],
  authScheme: "basic_auth",
  pkce: false,
  async fetchUser(ctx) {
    const u = await getJson(ctx, `${ctx.endpoints.api}/user`);
    const list = await getJson<{ values?: Record<string, unknown>[] }>(
      ctx,
      `${ctx.endpoints.api}/user/emails`,
    );
    const avatar = str(obj(obj(u.links).avatar).href);
    return {
      id: String(u.uuid ?? ""),
      issuer: ctx.endpoints.api,
      emails: (list.values ?? []).filter((e) => str(e.email)).map((e) => ({
        email: String(e.email),
        verified: e.is_confirmed === true,
        primary: e.is_primary === true,
      })),
      name: str(u.display_name),
      avatarUrl: avatar,
      userName: str(u.username),
    };
  },
};
