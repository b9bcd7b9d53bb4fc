/**
 * Ported from auth-js test/GoTrueClient.test.ts: signing out, the user (get, update, recovery),
 * sign-in through OAuth providers (the URLs the client builds), identities, reauthentication,
 * anonymous sign-in, ID tokens and Web3 sign-in (which the CLI instance, like this server, has
 * off), against the CLI instance.
 */
import {
  assert,
  assertTypes,
  client,
  creds,
  internals,
  ported,
  signedUp,
  supabaseAdmin,
  upstream,
  USER_SHAPE,
} from "./_helpers.ts";

const TEST_USER_DATA = { info: "some info" };
const OA = "The auth client can signin with third-party oAuth providers > ";
const UM = "User management > ";
const W3 = "Web3 Authentication > ";

type Loose = Parameters<ReturnType<typeof client>["signInWithWeb3"]>[0];

/** Sign-in through a provider: no error, a URL and the provider name. */
async function oauthUrl(options: Record<string, unknown>, provider = "google") {
  const { data, error } = await client().signInWithOAuth({
    // deno-lint-ignore no-explicit-any
    provider: provider as any,
    options,
  });
  assert.equal(error, null);
  assert.ok(data.url);
  assert.ok(data.provider);
  return data;
}

/** signInWithWeb3 with `credentials` throws `message` (the client refuses before any request). */
async function web3Throws(credentials: unknown, message: string | RegExp): Promise<void> {
  await assert.rejects(
    client().signInWithWeb3(credentials as Loose),
    typeof message === "string" ? { message } : message,
  );
}

upstream("GoTrueClient.test.ts", import.meta.url, [
  ported("Signout behaviour > signOut", async () => {
    const { c, email, password } = await signedUp();
    await c.signInWithPassword({ email, password });
    const { error } = await c.signOut();
    assert.equal(error, null);
    const { data } = await c.getUser();
    assert.equal(data.user, null);
  }),
  ported(
    "Signout behaviour > signOut should remove session if user is not found or jwt is invalid",
    async () => {
      const { c, email, password } = await signedUp();
      const signedIn = await c.signInWithPassword({ email, password });
      assert.equal(signedIn.error, null);
      assert.ok(signedIn.data.user);
      const kept = await c.getSession();
      assert.ok(kept.data.session);
      assert.equal(kept.error, null);
      const admin = await supabaseAdmin();
      await admin.deleteUser(signedIn.data.user.id);
      const { error } = await c.signOut();
      assert.equal(error, null, "signing out a deleted user's session is not an error");
    },
  ),

  ported(`${UM}Get user`, async () => {
    const { email, session } = await signedUp();
    const user = (session as { user: Record<string, unknown> }).user;
    assertTypes(user, USER_SHAPE);
    assert.equal((user.app_metadata as { provider: string }).provider, "email");
    assert.equal(user.email, email);
  }),
  ported(`${UM}Update user`, async () => {
    const { c, email } = await signedUp();
    const { data, error } = await c.updateUser({ data: { hello: "world" } });
    assert.equal(error, null);
    assertTypes(data.user, USER_SHAPE);
    assert.equal(data.user?.email, email);
    assert.equal(data.user?.user_metadata.hello, "world");
  }),
  ported(`${UM}Get user after updating`, async () => {
    const { c, email } = await signedUp();
    const { data, error } = await c.updateUser({ data: { hello: "world" } });
    assert.equal(error, null);
    assertTypes(data.user, USER_SHAPE);
    assert.deepEqual(data.user?.user_metadata, { hello: "world" });
    assert.equal(data.user?.email, email);
  }),
  ported(`${UM}Get user after logging out`, async () => {
    const { c, email, password } = await signedUp();
    const { data } = await c.signInWithPassword({ email, password });
    assert.ok(data.user);
    await c.signOut();
    const after = await c.getSession();
    assert.equal(after.data.session, null);
    assert.equal(after.error, null);
  }),
  ported(`${UM}signIn() with the wrong password`, async () => {
    const { email, password } = creds();
    const { data, error } = await client().signInWithPassword({
      email,
      password: `${password}-wrong`,
      options: { captchaToken: "some_token" },
    });
    assert.ok(error?.message);
    assert.equal(data.session, null);
  }),
  ported(`${UM}signIn() with the wrong phone`, async () => {
    const { data, error } = await client().signInWithPassword({
      phone: "+34123",
      password: creds().password,
      options: { captchaToken: "some_token" },
    });
    assert.ok(error?.message);
    assert.equal(data.session, null);
  }),
  ported("signInWithPassword() should fail when both email and phone are missing", async () => {
    const { data, error } = await client().signInWithPassword(
      // deno-lint-ignore no-explicit-any
      { password: "password123" } as any,
    );
    assert.match(
      String(error?.message),
      /You must provide either an email or phone number and a password/,
    );
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${UM}resetPasswordForEmail() sends an email for password recovery`, async () => {
    const { c, email } = await signedUp();
    const { data, error } = await c.resetPasswordForEmail(email, {
      redirectTo: "http://localhost:9999/welcome",
    });
    assert.ok(data);
    assert.equal((error as { message?: string } | null)?.message, undefined);
  }),
  ported(
    `${UM}resetPasswordForEmail() if user does not exist, user details are not exposed`,
    async () => {
      const { data, error } = await client().resetPasswordForEmail(
        "this_user@does-not-exist.com",
        { redirectTo: "http://localhost:9999/welcome", captchaToken: "some_token" },
      );
      assert.deepEqual(data, {});
      assert.equal(error, null);
    },
  ),
  ported(`${UM}refreshAccessToken()`, async () => {
    const { c, email, session } = await signedUp();
    const { data, error } = await internals(c)._refreshAccessToken(
      (session as { refresh_token: string }).refresh_token,
    );
    assert.equal(error, null);
    assert.equal(data?.user?.email, email);
  }),

  ported(`${OA}signIn() with Provider`, async () => {
    await oauthUrl({});
  }),
  ported(`${OA}signIn() with Provider can append a redirectUrl `, async () => {
    await oauthUrl({ redirectTo: "https://localhost:9000/welcome" });
  }),
  ported(`${OA}signIn() with Provider can append scopes`, async () => {
    await oauthUrl({ scopes: "repo" }, "github");
  }),
  ported(`${OA}signIn() with Provider can append multiple options`, async () => {
    await oauthUrl({ redirectTo: "https://localhost:9000/welcome", scopes: "repo" }, "github");
  }),
  ported(`${OA}should handle exchangeCodeForSession with invalid code`, async () => {
    const { data, error } = await client().exchangeCodeForSession("invalid-code");
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${OA}should handle signInWithOAuth with redirectTo option`, async () => {
    await oauthUrl({ redirectTo: "http://localhost:3000/callback" });
  }),
  ported(`${OA}should handle signInWithOAuth with queryParams`, async () => {
    await oauthUrl({ queryParams: { access_type: "offline", prompt: "consent" } }, "github");
  }),
  ported(`${OA}signIn() with custom OIDC provider`, async () => {
    const data = await oauthUrl({}, "custom:my-oidc-provider");
    assert.equal(data.provider, "custom:my-oidc-provider");
  }),
  ported(`${OA}signIn() with custom OIDC provider and options`, async () => {
    const data = await oauthUrl(
      { redirectTo: "https://localhost:9000/callback", scopes: "openid profile email" },
      "custom:my-oidc-provider",
    );
    assert.match(data.url, /redirect_to=/);
    assert.match(data.url, /scopes=/);
    assert.equal(data.provider, "custom:my-oidc-provider");
  }),
  ported(`${OA}Developers can subscribe and unsubscribe > Subscribe a listener`, () => {
    const c = client();
    c.onAuthStateChange(() => {});
    assert.ok(internals(c).stateChangeEmitters.size > 0);
  }),
  ported(`${OA}Developers can subscribe and unsubscribe > Unsubscribe a listener`, () => {
    const c = client();
    const { data } = c.onAuthStateChange(() => {});
    data.subscription.unsubscribe();
    assert.equal(internals(c).stateChangeEmitters.size, 0);
  }),
  ported(`${OA}Sign Up Enabled > User can sign up`, async () => {
    const { email, password } = creds();
    const { data, error } = await client().signUp({ email, password });
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
  }),

  ported("signInAnonymously > should successfully sign in anonymously", async () => {
    const c = client();
    const { data, error } = await c.signInAnonymously();
    assert.equal(error, null);
    assert.ok(data.session);
    assert.equal(data.user?.is_anonymous, true);
    assert.ok((await c.getSession()).data.session);
  }),
  ported("signInAnonymously > should sign in anonymously with user data", async () => {
    const { data, error } = await client().signInAnonymously({ options: { data: TEST_USER_DATA } });
    assert.equal(error, null);
    assert.deepEqual(data.user?.user_metadata, TEST_USER_DATA);
  }),

  ported(`${W3}signInWithWeb3 should throw error for unsupported chain`, async () => {
    await web3Throws(
      { chain: "polygon", message: "test message", signature: new Uint8Array([1, 2, 3]) },
      '@supabase/auth-js: Unsupported chain "polygon"',
    );
  }),
  ported(`${W3}signInWithWeb3 should handle solana chain`, async () => {
    const { data, error } = await client().signInWithWeb3(
      { chain: "solana", message: "test message", signature: new Uint8Array([1, 2, 3]) },
    );
    assert.equal(data.session, null);
    assert.match(String(error?.message), /Web3 provider is disabled/);
  }),
  ported(`${W3}signInWithWeb3 should fail solana chain without message`, async () => {
    await web3Throws(
      { chain: "solana", signature: new Uint8Array([1, 2, 3]) },
      "@supabase/auth-js: Both wallet and url must be specified in non-browser environments.",
    );
  }),
  ported(`${W3}signInWithWeb3 should fail solana chain without signMessage`, async () => {
    await web3Throws(
      {
        chain: "solana",
        wallet: { address: "0x123", publicKey: { toBase58: () => "0x123" }, privateKey: "0x123" },
        options: { url: "https://example.com" },
      },
      "@supabase/auth-js: Wallet does not have a compatible signMessage() and publicKey.toBase58() API",
    );
  }),
  ported(`${W3}signInWithWeb3 should fail solana chain without publicKey`, async () => {
    await web3Throws(
      {
        chain: "solana",
        wallet: {
          address: "0x123",
          privateKey: "0x123",
          signMessage: () => Promise.resolve(new Uint8Array([1, 2, 3])),
        },
        options: { url: "https://example.com" },
      },
      "@supabase/auth-js: Wallet does not have a compatible signMessage() and publicKey.toBase58() API",
    );
  }),
  ported(`${W3}signInWithWeb3 should handle ethereum chain`, async () => {
    const { data, error } = await client().signInWithWeb3(
      {
        chain: "ethereum",
        message: "test message",
        signature: new Uint8Array([1, 2, 3]),
      } as unknown as Loose,
    );
    assert.equal(data.session, null);
    assert.match(String(error?.message), /Web3 provider is disabled/);
  }),
  ported(`${W3}signInWithWeb3 should fail ethereum chain without message`, async () => {
    await web3Throws(
      { chain: "ethereum", signature: new Uint8Array([1, 2, 3]) },
      "@supabase/auth-js: Both wallet and url must be specified in non-browser environments.",
    );
  }),
  ported(`${W3}signInWithWeb3 should fail ethereum chain without signMessage`, async () => {
    await web3Throws(
      {
        chain: "ethereum",
        wallet: {
          address: "0xa1E993d09257291470e86778399D79A0864F327E",
          on: () => {},
          removeListener: () => {},
          request: ({ method }: { method: string }) =>
            method === "eth_requestAccounts"
              ? Promise.reject(
                new Error("Missing or invalid. request() method: eth_requestAccounts"),
              )
              : Promise.resolve(undefined),
        },
        options: { url: "https://example.com" },
      },
      "@supabase/auth-js: Wallet method eth_requestAccounts is missing or invalid",
    );
  }),
  ported(`${W3}signInWithWeb3 should fail ethereum chain without publicKey`, async () => {
    await web3Throws(
      {
        chain: "ethereum",
        wallet: {
          address: "",
          on: () => {},
          removeListener: () => {},
          request: () => Promise.resolve([]),
        },
        options: { url: "https://example.com" },
      },
      "@supabase/auth-js: No accounts available. Please ensure the wallet is connected.",
    );
  }),
  ported(`${W3}should handle signInWithWeb3 with unsupported chain`, async () => {
    await web3Throws(
      {
        chain: "polygon",
        message: "test message",
        signature: "0xtest-signature",
      },
      /Unsupported chain "polygon"/,
    );
  }),
  ported(`${W3}should handle signInWithWeb3 with missing message`, async () => {
    await web3Throws(
      { chain: "ethereum", signature: "test signature" },
      /Both wallet and url must be specified in non-browser environments/,
    );
  }),
  ported(`${W3}should handle signInWithWeb3 with missing wallet`, async () => {
    const { data, error } = await client().signInWithWeb3(
      { chain: "ethereum", message: "test message" } as unknown as Loose,
    );
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${W3}should handle signInWithWeb3 with invalid signature`, async () => {
    const { data, error } = await client().signInWithWeb3(
      {
        chain: "ethereum",
        message: "test message",
        signature: "0xinvalid-signature",
      } as unknown as Loose,
    );
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${W3}should handle signInWithWeb3 in non-browser environment`, async () => {
    const { data, error } = await client().signInWithWeb3({
      chain: "ethereum",
      message: "test message",
      wallet: { request: () => Promise.resolve(undefined), on: () => {}, removeListener: () => {} },
      options: { url: "http://localhost:9999" },
    } as unknown as Loose);
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),

  ported("ID Token Authentication > signInWithIdToken fails with disabled provider", async () => {
    const { data, error } = await client().signInWithIdToken({
      provider: "google",
      token: "mock-id-token",
      nonce: "mock-nonce",
      options: { captchaToken: "some_token" },
    });
    assert.equal(data.session, null);
    // upstream accepts either, by GoTrue version: "Provider (issuer ...) is not enabled" or "Bad ID token"
    assert.match(String(error?.message), /not enabled|Bad ID token/);
  }),
  ported("ID Token Authentication > should handle signInWithIdToken with provider", async () => {
    const { data, error } = await client().signInWithIdToken({
      provider: "google",
      token: "mock-id-token",
      nonce: "mock-nonce",
    });
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(
    "ID Token Authentication > should handle signInWithIdToken with custom OIDC provider",
    async () => {
      const { data, error } = await client().signInWithIdToken({
        provider: "custom:my-oidc-provider",
        token: "mock-id-token",
        nonce: "mock-nonce",
      });
      assert.ok(error);
      assert.equal(data.session, null);
      assert.equal(data.user, null);
    },
  ),

  ported("Reauthentication > reauthenticate() fails without session", async () => {
    // Upstream's shared client still holds the anonymous session an earlier case of the file
    // made (signInAnonymously with user data), and the message it expects is the server's for
    // a user with neither address nor number: that is the state built here.
    const c = client();
    assert.equal((await c.signInAnonymously({ options: { data: TEST_USER_DATA } })).error, null);
    const { data, error } = await c.reauthenticate();
    assert.equal(data.session, null);
    assert.match(
      String(error?.message),
      /Reauthentication requires the user to have an email or a phone number/,
    );
  }),
  ported("Reauthentication > reauthenticate() returns null user and session", async () => {
    const { c } = await signedUp();
    const { data, error } = await c.reauthenticate();
    assert.equal(error, null);
    assert.ok(data);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),

  ported("Identity Management > getUserIdentities() returns error without session", async () => {
    const { error } = await client().getUserIdentities();
    assert.match(String(error?.message), /Auth session missing!/);
  }),
  ported(
    "Identity Management > getUserIdentities() returns user identities after signup",
    async () => {
      const { c, email } = await signedUp();
      const { data, error } = await c.getUserIdentities();
      assert.equal(error, null);
      assert.equal(data?.identities.length, 1);
      assert.equal(data!.identities[0].provider, "email");
      assert.equal(data!.identities[0].identity_data?.email, email);
    },
  ),
  ported("Identity Management > linkIdentity() fails when manual linking is disabled", async () => {
    const { c } = await signedUp();
    const { error } = await c.linkIdentity({
      provider: "google",
      options: {
        redirectTo: "http://localhost:3000",
        scopes: "openid profile email",
        queryParams: { prompt: "select_account" },
      },
    });
    assert.match(String(error?.message), /Manual linking is disabled/);
  }),
  ported(
    "Identity Management > unlinkIdentity() fails when manual linking is disabled",
    async () => {
      const { c } = await signedUp();
      const { data } = await c.getUserIdentities();
      assert.ok(data && data.identities.length > 0);
      const { error } = await c.unlinkIdentity(data.identities[0]);
      assert.match(String(error?.message), /Manual linking is disabled/);
    },
  ),
]);
