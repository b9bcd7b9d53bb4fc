/**
 * GitLab (gitlab.com or a self-managed instance in EXTERNAL_GITLAB_URL):
 * the `read_user` scope, client id and secret in the token request, PKCE,
 * the user from `GET /api/v4/user` (its `email` is verified when
 * `confirmed_at` is set) and further addresses from `GET /api/v4/user/emails`
 * (verified when their own `confirmed_at` is set).
 * Docs: docs.gitlab.com/api/oauth2, docs.gitlab.com/api/users
 */
import { getJson, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const gitlab: ProviderSpec = {
  name: "gitlab",
  endpoints(url) {
    const base = chooseBase(url, "https://gitlab.com");
    return {
      authorize: `${base}/oauth/authorize`,
      token: `${base}/oauth/token`,
      api: `${base}/api/v4`,
    };
  },
  scopes: ["read_user"],
  authScheme: "request_body",
  pkce: true,
  urlSetting: { default: "https://gitlab.com" },
  async fetchUser(ctx) {
    const u = await getJson(ctx, `${ctx.endpoints.api}/user`);
    const list = await getJson<Record<string, unknown>[]>(ctx, `${ctx.endpoints.api}/user/emails`);
    const primary = str(u.email);
    const emails = (Array.isArray(list) ? list : [])
      .filter((e) => str(e.email) && str(e.email)!.toLowerCase() !== primary?.toLowerCase())
      .map((e) => ({ email: String(e.email), verified: !!str(e.confirmed_at), primary: false }));
    if (primary) emails.push({ email: primary, verified: !!str(u.confirmed_at), primary: true });
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails,
      name: str(u.name),
      avatarUrl: str(u.avatar_url),
      userName: str(u.username),
    };
  },
};
