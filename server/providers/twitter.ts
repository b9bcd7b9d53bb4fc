/**
 * Twitter / X with OAuth 2.0 (authorization code with PKCE, which X
 * requires): `tweet.read users.read users.email offline.access`, HTTP Basic
 * client authentication (confidential client), the user from
 * `GET https://api.x.com/2/users/me` with `confirmed_email` (present only
 * with the `users.email` scope and a confirmed address). GoTrue's `twitter`
 * provider speaks OAuth 1.0a; ours is built on the OAuth 2.0 client library,
 * like every other provider, and uses an OAuth 2.0 client id and secret.
 * Docs: docs.x.com/resources/fundamentals/authentication/oauth-2-0/authorization-code,
 * docs.x.com/x-api/users/user-lookup-me
 */
import { getJson, obj, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const twitter: ProviderSpec = {
  name: "twitter",
  endpoints(url) {
    const api = chooseBase(url, "https://api.x.com");
    return {
      authorize: `${chooseBase(url, "https://x.com")}/i/oauth2/authorize`,
      token: `${api}/2/oauth2/token`,
      api: `${api}/2`,
    };
  },
  scopes: ["tweet.read", "users.read", "users.email", "offline.access"],
  authScheme: "basic_auth",
  pkce: true,
  async fetchUser(ctx) {
    const res = await getJson(ctx, `${ctx.endpoints.api}/users/me`, {
      params: { "user.fields": "id,name,username,profile_image_url,confirmed_email" },
    });
    const u = obj(res.data);
    const email = str(u.confirmed_email);
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: true, primary: true }] : [],
      name: str(u.name),
      avatarUrl: str(u.profile_image_url),
      userName: str(u.username),
    };
  },
};
