/**
 * WorkOS SSO: the authorization request names a `connection`,
 * `organization` or `provider` (pass them as query parameters of
 * `/authorize`; `workos_provider` is sent as `provider`), client id and secret
 * in the token request, and the profile arrives in the token response itself
 * (`profile.id`, `email`, `first_name`, `last_name`, `connection_id`,
 * `organization_id`). The identity provider behind WorkOS vouches for the
 * address, so it counts as verified (as in GoTrue).
 * Docs: workos.com/docs/reference/sso/get-authorization-url, .../sso/profile/get-profile-and-token
 */
import { obj, str } from "./http.ts";
import { chooseBase, ProviderError, type ProviderSpec } from "./types.ts";

export const workos: ProviderSpec = {
  name: "workos",
  endpoints(url) {
    const base = chooseBase(url, "https://api.workos.com");
    return { authorize: `${base}/sso/authorize`, token: `${base}/sso/token`, api: base };
  },
  scopes: [],
  authScheme: "request_body",
  pkce: false,
  queryAliases: { workos_provider: "provider" },
  fetchUser({ token, endpoints }) {
    const p = obj(token.params.profile);
    if (!str(p.id)) return Promise.reject(new ProviderError("workos sent no profile"));
    const email = str(p.email);
    const name = [str(p.first_name), str(p.last_name)].filter(Boolean).join(" ");
    return Promise.resolve({
      id: String(p.id),
      issuer: endpoints.api,
      emails: email ? [{ email, verified: true, primary: true }] : [],
      name: name || undefined,
      customClaims: {
        connection_id: p.connection_id ?? null,
        organization_id: p.organization_id ?? null,
        connection_type: p.connection_type ?? null,
      },
    });
  },
};
