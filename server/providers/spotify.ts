/**
 * Spotify: the `user-read-email` scope, HTTP Basic client authentication,
 * PKCE, the user from `GET https://api.spotify.com/v1/me`. Spotify says the
 * address "is unverified; there is no proof that it actually belongs to the
 * user", so it never links to an existing account. The largest image is the
 * avatar.
 * Docs: developer.spotify.com/documentation/web-api/tutorials/code-flow,
 * .../reference/get-current-users-profile
 */
import { getJson, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const spotify: ProviderSpec = {
  name: "spotify",
  endpoints(url) {
    const accounts = chooseBase(url, "https://accounts.spotify.com");
    return {
      authorize: `${accounts}/authorize`,
      token: `${accounts}/api/token`,
      api: `${chooseBase(url, "https://api.spotify.com")}/v1`,
    };
  },
  scopes: ["user-read-email"],
  authScheme: "basic_auth",
  pkce: true,
  async fetchUser(ctx) {
    const u = await getJson(ctx, `${ctx.endpoints.api}/me`);
    const images = Array.isArray(u.images) ? u.images as Record<string, unknown>[] : [];
    const area = (i: Record<string, unknown>) => Number(i.width ?? 0) * Number(i.height ?? 0);
    const largest = images.reduce<Record<string, unknown> | undefined>(
      (best, i) => (!best || area(i) > area(best) ? i : best),
      undefined,
    );
    const email = str(u.email);
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: false, primary: true }] : [],
      name: str(u.display_name),
      avatarUrl: str(largest?.url),
    };
  },
};
