/**
 * Twitch: the `user:read:email` scope, client id and secret in the token
 * request, the user from `GET https://api.twitch.tv/helix/users` with the
 * `Client-Id` header. Helix returns `email` only for a verified address.
 * Docs: dev.twitch.tv/docs/authentication/getting-tokens-oauth,
 * dev.twitch.tv/docs/api/reference/#get-users
 */
import { getJson, str } from "./http.ts";
import { chooseBase, ProviderError, type ProviderSpec } from "./types.ts";

export const twitch: ProviderSpec = {
  name: "twitch",
  endpoints(url) {
    const id = chooseBase(url, "https://id.twitch.tv");
    return {
      authorize: `${id}/oauth2/authorize`,
      token: `${id}/oauth2/token`,
      api: `${chooseBase(url, "https://api.twitch.tv")}/helix`,
    };
  },
  scopes: ["user:read:email"],
  authScheme: "request_body",
  pkce: false,
  async fetchUser(ctx) {
    const res = await getJson<{ data?: Record<string, unknown>[] }>(
      ctx,
      `${ctx.endpoints.api}/users`,
      { headers: { "Client-Id": ctx.settings.clientId } },
    );
    const u = res.data?.[0];
    if (!u) throw new ProviderError("twitch answered no user");
    const email = str(u.email);
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: true, primary: true }] : [],
      name: str(u.display_name) ?? str(u.login),
      avatarUrl: str(u.profile_image_url),
      userName: str(u.login),
      customClaims: { broadcaster_type: u.broadcaster_type, type: u.type },
    };
  },
};
