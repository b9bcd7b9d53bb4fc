/**
 * Figma OAuth 2.0: the `current_user:read` scope, HTTP Basic client
 * authentication at `https://api.figma.com/v1/oauth/token`, the user from
 * `GET /v1/me` (`id`, `email`, `handle`, `img_url`). A Figma account's
 * address is confirmed before it can sign in, so it counts as verified.
 * Docs: developers.figma.com/docs/rest-api/authentication
 */
import { getJson, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const figma: ProviderSpec = {
  name: "figma",
  endpoints(url) {
    const api = chooseBase(url, "https://api.figma.com");
    return {
      authorize: `${chooseBase(url, "https://www.figma.com")}/oauth`,
      token: `${api}/v1/oauth/token`,
      api,
    };
  },
  scopes: ["current_user:read"],
  authScheme: "basic_auth",
  pkce: false,
  async fetchUser(ctx) {
    const u = await getJson(ctx, `${ctx.endpoints.api}/v1/me`);
    const email = str(u.email);
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: true, primary: true }] : [],
      name: str(u.handle),
      avatarUrl: str(u.img_url),
      userName: str(u.handle),
    };
  },
};
