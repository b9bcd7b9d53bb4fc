/**
 * The production endpoints of every provider, without a `_URL` override: the
 * end-to-end tests run against fakes under an override, so this table is what
 * pins the documented authorization, token, user-info and key-set URLs and the
 * ID-token issuers of the real services.
 */
import assert from "node:assert/strict";
import { PROVIDER_SPECS } from "../../../server/providers/specs.ts";

const DEFAULTS: Record<string, { authorize: string; token: string; api: string; jwks?: string }> = {
  apple: {
    authorize: "https://appleid.apple.com/auth/authorize",
    token: "https://appleid.apple.com/auth/token",
    api: "https://appleid.apple.com",
    jwks: "https://appleid.apple.com/auth/keys",
  },
  azure: {
    authorize: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
    token: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
    api: "https://login.microsoftonline.com/common",
    jwks: "https://login.microsoftonline.com/common/discovery/v2.0/keys",
  },
  bitbucket: {
    authorize: "https://bitbucket.org/site/oauth2/authorize",
    token: "https://bitbucket.org/site/oauth2/access_token",
    api: "https://api.bitbucket.org/2.0",
  },
  discord: {
    authorize: "https://discord.com/oauth2/authorize",
    token: "https://discord.com/api/oauth2/token",
    api: "https://discord.com/api",
  },
  facebook: {
    authorize: "https://www.facebook.com/dialog/oauth",
    token: "https://graph.facebook.com/oauth/access_token",
    api: "https://graph.facebook.com",
  },
  figma: {
    authorize: "https://www.figma.com/oauth",
    token: "https://api.figma.com/v1/oauth/token",
    api: "https://api.figma.com",
  },
  github: {
    authorize: "https://github.com/login/oauth/authorize",
    token: "https://github.com/login/oauth/access_token",
    api: "https://api.github.com",
  },
  gitlab: {
    authorize: "https://gitlab.com/oauth/authorize",
    token: "https://gitlab.com/oauth/token",
    api: "https://gitlab.com/api/v4",
  },
  google: {
    authorize: "https://accounts.google.com/o/oauth2/v2/auth",
    token: "https://oauth2.googleapis.com/token",
    api: "https://openidconnect.googleapis.com/v1/userinfo",
    jwks: "https://www.googleapis.com/oauth2/v3/certs",
  },
  linkedin: {
    authorize: "https://www.linkedin.com/oauth/v2/authorization",
    token: "https://www.linkedin.com/oauth/v2/accessToken",
    api: "https://api.linkedin.com/v2/userinfo",
    jwks: "https://www.linkedin.com/oauth/openid/jwks",
  },
  notion: {
    authorize: "https://api.notion.com/v1/oauth/authorize",
    token: "https://api.notion.com/v1/oauth/token",
    api: "https://api.notion.com/v1",
  },
  slack: {
    authorize: "https://slack.com/openid/connect/authorize",
    token: "https://slack.com/api/openid.connect.token",
    api: "https://slack.com/api/openid.connect.userInfo",
    jwks: "https://slack.com/openid/connect/keys",
  },
  snapchat: {
    authorize: "https://accounts.snapchat.com/accounts/oauth2/auth",
    token: "https://accounts.snapchat.com/accounts/oauth2/token",
    api: "https://kit.snapchat.com/v1/me",
  },
  spotify: {
    authorize: "https://accounts.spotify.com/authorize",
    token: "https://accounts.spotify.com/api/token",
    api: "https://api.spotify.com/v1",
  },
  twitch: {
    authorize: "https://id.twitch.tv/oauth2/authorize",
    token: "https://id.twitch.tv/oauth2/token",
    api: "https://api.twitch.tv/helix",
  },
  twitter: {
    authorize: "https://x.com/i/oauth2/authorize",
    token: "https://api.x.com/2/oauth2/token",
    api: "https://api.x.com/2",
  },
  workos: {
    authorize: "https://api.workos.com/sso/authorize",
    token: "https://api.workos.com/sso/token",
    api: "https://api.workos.com",
  },
};

Deno.test("every provider's default endpoints are its documented production URLs", () => {
  for (const [name, want] of Object.entries(DEFAULTS)) {
    const e = PROVIDER_SPECS[name as keyof typeof PROVIDER_SPECS].endpoints("");
    assert.deepEqual(
      {
        authorize: e.authorize,
        token: e.token,
        api: e.api,
        ...(e.idToken ? { jwks: e.idToken.jwksUri } : {}),
      },
      want,
      name,
    );
  }
  // keycloak has no default: its realm URL is required.
  const kc = PROVIDER_SPECS.keycloak.endpoints("https://kc.example.com/realms/main");
  assert.equal(kc.authorize, "https://kc.example.com/realms/main/protocol/openid-connect/auth");
  assert.equal(kc.idToken?.issuer, "https://kc.example.com/realms/main");
});

/** Whether `iss` (with `claims`) is accepted as the issuer of `name`'s ID tokens. */
function accepts(name: keyof typeof PROVIDER_SPECS, iss: string, url = "", claims = {}): boolean {
  const rule = PROVIDER_SPECS[name].endpoints(url).idToken!.issuer;
  return typeof rule === "string" ? rule === iss : rule(iss, claims);
}

Deno.test("the ID-token issuers each provider signs with, and no other", () => {
  // Apple signs with either host (GoTrue accepts both since Apple switched unannounced).
  assert.ok(accepts("apple", "https://appleid.apple.com"));
  assert.ok(accepts("apple", "https://account.apple.com"));
  assert.ok(!accepts("apple", "https://apple.com"));
  assert.ok(accepts("google", "https://accounts.google.com"));
  assert.ok(accepts("google", "accounts.google.com"));
  assert.ok(!accepts("google", "https://accounts.google.com.evil.example"));
  assert.ok(accepts("linkedin", "https://www.linkedin.com/oauth"));
  assert.ok(accepts("slack", "https://slack.com"));
  // Azure: the issuer names the token's own tenant; a tenant URL admits only that tenant.
  const tid = "9188040d-6c67-4c5b-b112-36a304b66dad";
  const iss = `https://login.microsoftonline.com/${tid}/v2.0`;
  assert.ok(accepts("azure", iss, "", { tid }));
  assert.ok(!accepts("azure", iss, "", { tid: "another-tenant" }));
  assert.ok(!accepts("azure", iss, "", {}));
  const tenantUrl = `https://login.microsoftonline.com/${tid}`;
  assert.ok(accepts("azure", iss, tenantUrl, { tid }));
  const other = "72f988bf-86f1-41af-91ab-2d7cd011db47";
  assert.ok(
    !accepts("azure", `https://login.microsoftonline.com/${other}/v2.0`, tenantUrl, { tid: other }),
  );
});
