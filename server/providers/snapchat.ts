/**
 * Snapchat Login Kit: the external id, display name and Bitmoji avatar
 * scopes, HTTP Basic client authentication, PKCE, the user from the GraphQL
 * endpoint `GET https://kit.snapchat.com/v1/me?query=...`. Snapchat does not
 * disclose an e-mail address, so users signing in with it have none.
 * Docs: developers.snap.com/snap-kit/login-kit/overview
 */
import { getJson, obj, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

const QUERY = "{me{externalId displayName bitmoji{avatar}}}";

export const snapchat: ProviderSpec = {
  name: "snapchat",
  endpoints(url) {
    const accounts = chooseBase(url, "https://accounts.snapchat.com");
    return {
      authorize: `${accounts}/accounts/oauth2/auth`,
      token: `${accounts}/accounts/oauth2/token`,
      api: `${chooseBase(url, "https://kit.snapchat.com")}/v1/me`,
    };
  },
  scopes: [
    "https://auth.snapchat.com/oauth2/api/user.external_id",
    "https://auth.snapchat.com/oauth2/api/user.display_name",
    "https://auth.snapchat.com/oauth2/api/user.bitmoji.avatar",
  ],
  authScheme: "basic_auth",
  pkce: true,
  emailOptional: true,
  async fetchUser(ctx) {
    const res = await getJson(ctx, ctx.endpoints.api, { params: { query: QUERY } });
    const me = obj(obj(res.data).me);
    return {
      id: String(me.externalId ?? ""),
      issuer: ctx.endpoints.api,
      emails: [],
      name: str(me.displayName),
      avatarUrl: str(obj(me.bitmoji).avatar),
    };
  },
};
