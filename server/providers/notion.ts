/**
 * Notion public integrations: authorization with `owner=user`, the token
 * request as JSON with HTTP Basic client authentication, the user from
 * `GET /v1/users/me` (the bot user, whose `bot.owner.user` is the person who
 * authorized) with the `Notion-Version` header. Notion tells the address of
 * the person's account; it counts as verified (as in GoTrue).
 * Docs: developers.notion.com/docs/authorization, .../reference/get-self
 */
import { getJson, obj, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

/** The API version this server speaks. */
export const NOTION_VERSION = "2022-06-28";

export const notion: ProviderSpec = {
  name: "notion",
  endpoints(url) {
    const base = chooseBase(url, "https://api.notion.com");
    return {
      authorize: `${base}/v1/oauth/authorize`,
      token: `${base}/v1/oauth/token`,
      api: `${base}/v1`,
    };
  },
  scopes: [],
  authScheme: "basic_auth",
  pkce: false,
  authorizeParams: { owner: "user" },
  tokenHeaders: { "Content-Type": "application/json" },
  async fetchUser(ctx) {
    const me = await getJson(ctx, `${ctx.endpoints.api}/users/me`, {
      headers: { "Notion-Version": NOTION_VERSION },
    });
    const user = obj(obj(obj(me.bot).owner).user);
    const email = str(obj(user.person).email);
    return {
      id: String(user.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: true, primary: true }] : [],
      name: str(user.name),
      avatarUrl: str(user.avatar_url),
    };
  },
};
