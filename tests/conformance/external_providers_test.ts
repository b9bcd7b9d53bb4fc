/**
 * Cases ported from supabase/auth internal/api/external_<provider>_test.go,
 * one group per provider we support, against the local provider fakes
 * (tests/helpers/provider_fakes.ts) that check each request as the provider
 * documents it.
 */
import { type ProviderFake, startProviderFake } from "../helpers/provider_fakes.ts";
import { defaultUser, REDIRECT_URI, signIn } from "../server/providers/_helpers.ts";
import { assert, conformance, differs, type Env, pkcePair, ported } from "./_helpers.ts";

interface Spec {
  /** The Go spelling in the upstream function names (first function, the rest). */
  go: [string, string];
  authorizeName?: string;
  emptyEmail?: "EmptyEmail" | "NoEmail";
  codeName?: string;
  pkce?: boolean;
  banned?: boolean;
  verifiedFalse?: boolean;
  secondary?: "SecondaryEmail" | "NonPrimaryEmail";
  /** The existing user is matched by a previous identity, not by address (not ported). */
  noExisting?: boolean;
  onlyAuthorize?: boolean;
}

const PROVIDERS: Record<string, Spec> = {
  apple: { go: ["Apple", "Apple"], onlyAuthorize: true },
  azure: { go: ["Azure", "Azure"], emptyEmail: "NoEmail" },
  bitbucket: { go: ["Bitbucket", "Bitbucket"], emptyEmail: "NoEmail", secondary: "SecondaryEmail" },
  discord: { go: ["Discord", "Discord"], emptyEmail: "EmptyEmail" },
  facebook: { go: ["Facebook", "Facebook"], emptyEmail: "EmptyEmail" },
  figma: { go: ["Figma", "Figma"], emptyEmail: "EmptyEmail", pkce: true, banned: true },
  github: {
    go: ["Github", "GitHub"],
    emptyEmail: "EmptyEmail",
    pkce: true,
    banned: true,
    verifiedFalse: true,
    secondary: "NonPrimaryEmail",
  },
  gitlab: {
    go: ["Gitlab", "GitLab"],
    codeName: "TestSignupExternalGitlab_AuthorizationCode",
    emptyEmail: "EmptyEmail",
    secondary: "SecondaryEmail",
  },
  google: { go: ["Google", "Google"], emptyEmail: "EmptyEmail" },
  linkedin: { go: ["Linkedin", "Linkedin"] },
  notion: { go: ["Notion", "Notion"], emptyEmail: "EmptyEmail" },
  slack: { go: ["SlackOIDC", "SlackOIDC"], onlyAuthorize: true },
  snapchat: { go: ["Snapchat", "Snapchat"], noExisting: true },
  twitch: { go: ["Twitch", "Twitch"], emptyEmail: "EmptyEmail" },
  twitter: { go: ["Twitter", "Twitter"], onlyAuthorize: true },
  workos: {
    go: ["WorkOSWithConnection", "Workos"],
    codeName: "TestSignupExternalWorkosAuthorizationCode",
    emptyEmail: "EmptyEmail",
  },
};

const FILE = (p: string) => `external_${p === "slack" ? "slack_oidc" : p}_test.go`;

function peers(name: string) {
  return async () => {
    const fake = await startProviderFake(name, { user: defaultUser() });
    return { env: fake.env(REDIRECT_URI), peer: fake, close: () => fake.close() };
  };
}

async function failure(e: Env, fake: ProviderFake, description: string, error: string) {
  const l = await signIn(e.srv, fake);
  assert.equal(l.query.get("error_description"), description, l.location.href);
  assert.equal(l.query.get("error"), error);
  assert.equal(l.hash.get("access_token"), null);
  assert.equal(l.hash.get("refresh_token"), null);
}

async function success(e: Env, fake: ProviderFake, email: string) {
  const l = await signIn(e.srv, fake);
  assert.equal(l.hash.get("error"), null, l.hash.get("error_description") ?? "");
  const token = l.hash.get("access_token");
  assert.ok(token, l.location.href);
  const me = await e.call("GET", "/user", undefined, token!);
  assert.equal(me.body.email, email);
  assert.deepEqual(fake.problems, []);
}

for (const [name, spec] of Object.entries(PROVIDERS)) {
  const [first, rest] = spec.go;
  const fake = (e: Env) => e.peer as ProviderFake;
  const open = [
    ported(`${spec.authorizeName ?? `TestSignupExternal${first}`}`, async (e) => {
      const q = new URLSearchParams({ provider: name });
      if (name === "workos") q.set("connection", "conn_123");
      const r = await e.call("GET", `/authorize?${q}`);
      assert.equal(r.status, 302, r.text);
      const to = new URL(r.headers.get("location")!);
      const p = to.searchParams;
      assert.equal(p.get("client_id"), fake(e).clientId);
      assert.equal(p.get("redirect_uri"), REDIRECT_URI);
      assert.equal(p.get("response_type"), "code");
      assert.ok(p.get("state"));
    }),
  ];
  if (!spec.onlyAuthorize) {
    open.push(
      ported(spec.codeName ?? `TestSignupExternal${rest}_AuthorizationCode`, async (e) => {
        fake(e).user = defaultUser();
        // Snapchat shares no address (GoTrue's case expects "")
        await success(e, fake(e), name === "snapchat" ? "" : fake(e).user.email!);
      }),
    );
  }
  if (spec.pkce) {
    open.push(ported(`TestSignupExternal${rest}_PKCE`, async (e) => {
      fake(e).user = defaultUser();
      const { verifier, challenge } = await pkcePair();
      const l = await signIn(e.srv, fake(e), {
        query: { code_challenge: challenge, code_challenge_method: "s256" },
      });
      const code = l.query.get("code");
      assert.ok(code, l.location.href);
      const t = await e.call("POST", "/token?grant_type=pkce", {
        auth_code: code,
        code_verifier: verifier,
      });
      assert.equal(t.status, 200, t.text);
      assert.equal(t.body.user.email, fake(e).user.email);
    }));
  }
  if (spec.banned) {
    open.push(ported(`TestSignupExternal${rest}ErrorWhenUserBanned`, async (e) => {
      fake(e).user = defaultUser();
      await success(e, fake(e), fake(e).user.email!);
      const row = await e.srv.services.users.findByEmail(fake(e).user.email!);
      const ban = await e.admin("PUT", `/admin/users/${row!.id}`, { ban_duration: "24h" });
      assert.equal(ban.status, 200, ban.text);
      await failure(e, fake(e), "User is banned", "access_denied");
    }));
  }
  if (spec.verifiedFalse) {
    open.push(ported(`TestSignupExternal${rest}ErrorWhenVerifiedFalse`, async (e) => {
      fake(e).user = defaultUser({ emailVerified: false });
      await failure(
        e,
        fake(e),
        `Unverified email with ${name}. A confirmation email has been sent to your ${name} email`,
        "access_denied",
      );
    }));
  }
  conformance(FILE(name), { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, open, { peers: peers(name) });

  if (spec.onlyAuthorize) continue;
  const closed = [
    ported(`TestSignupExternal${rest}DisableSignupErrorWhenNoUser`, async (e) => {
      fake(e).user = defaultUser();
      await failure(e, fake(e), "Signups not allowed for this instance", "access_denied");
      assert.equal(await e.srv.services.users.findByEmail(fake(e).user.email!), null);
    }),
  ];
  if (!spec.noExisting) {
    closed.push(
      ported(`TestSignupExternal${rest}DisableSignupSuccessWithPrimaryEmail`, async (e) => {
        fake(e).user = defaultUser();
        await e.user({ email: fake(e).user.email });
        await success(e, fake(e), fake(e).user.email!);
      }),
    );
  }
  if (spec.emptyEmail) {
    closed.push(differs(
      `TestSignupExternal${rest}DisableSignupErrorWhen${spec.emptyEmail}`,
      "a provider that shares no address is reported as error=access_denied, error_code=provider_email_needs_verification and a description naming the provider, where GoTrue reports an internal error (server_error, unexpected_failure): nothing failed on the server, and apps can act on the code",
      async (e) => {
        fake(e).user = defaultUser({ email: undefined });
        const l = await signIn(e.srv, fake(e));
        assert.equal(l.query.get("error"), "access_denied", l.location.href);
        assert.equal(l.query.get("error_code"), "provider_email_needs_verification");
        assert.equal(
          l.query.get("error_description"),
          `Error getting user email from external provider: ${name} did not share an e-mail address`,
        );
        assert.equal(l.hash.get("access_token"), null);
      },
    ));
  }
  if (spec.secondary) {
    closed.push(
      ported(`TestSignupExternal${rest}DisableSignupSuccessWith${spec.secondary}`, async (e) => {
        const secondary = e.email("secondary");
        fake(e).user = defaultUser({ extraEmails: [{ email: secondary, verified: true }] });
        await e.user({ email: secondary });
        await success(e, fake(e), secondary);
      }),
    );
  }
  conformance(FILE(name), { AUTHSVC_DISABLE_SIGNUP: "true" }, closed, { peers: peers(name) });
}

conformance(FILE("workos"), { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
  ...([
    ["TestSignupExternalWorkOSWithOrganization", "organization", "organization"],
    ["TestSignupExternalWorkOSWithProvider", "workos_provider", "provider"],
  ] as const).map(([go, param, sent]) =>
    ported(go, async (e) => {
      const value = `test_${param}_id`;
      const r = await e.call("GET", `/authorize?provider=workos&${param}=${value}`);
      assert.equal(r.status, 302, r.text);
      const p = new URL(r.headers.get("location")!).searchParams;
      assert.equal(p.get("client_id"), (e.peer as ProviderFake).clientId);
      assert.equal(p.get("redirect_uri"), REDIRECT_URI);
      assert.equal(p.get("response_type"), "code");
      assert.equal(p.get("scope") ?? "", "");
      assert.equal(p.get(sent), value);
      assert.ok(p.get("state"));
    })
  ),
], { peers: peers("workos") });
