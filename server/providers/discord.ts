/**
 * Discord OAuth 2.0: `identify email` scopes, the user from
 * `GET /api/users/@me` (`verified` says whether Discord verified `email`),
 * the avatar built from the CDN rules (animated hashes start with `a_`).
 * Docs: discord.com/developers/docs/topics/oauth2, .../resources/user
 */
import { getJson, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const discord: ProviderSpec = {
  name: "discord",
  endpoints(url) {
    const base = chooseBase(url, "https://discord.com");
    return {
      authorize: `${base}/oauth2/authorize`,
      token: `${base}/api/oauth2/token`,
      api: `${base}/api`,
    };
  },
  scopes: ["identify", "email"],
  authScheme: "basic_auth",
  pkce: false,
  async fetchUser(ctx) {
    const u = await getJson(ctx, `${ctx.endpoints.api}/users/@me`);
    const id = String(u.id ?? "");
    const avatar = str(u.avatar);
    let avatarUrl: string;
    if (avatar) {
      avatarUrl = `https://cdn.discordapp.com/avatars/${id}/${avatar}.${
        avatar.startsWith("a_") ? "gif" : "png"
      }`;
    } else {
      // Default avatars: (id >> 22) % 6 for the new username system, discriminator % 5 before it.
      const disc = Number(u.discriminator ?? 0);
      const index = disc ? disc % 5 : Number((BigInt(id || "0") >> 22n) % 6n);
      avatarUrl = `https://cdn.discordapp.com/embed/avatars/${index}.png`;
    }
    const email = str(u.email);
    return {
      id,
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: u.verified === true, primary: true }] : [],
      name: str(u.global_name) ?? str(u.username),
      avatarUrl,
      userName: str(u.username),
      customClaims: { global_name: u.global_name ?? null },
    };
  },
};
