/** Cases ported from supabase/auth internal/api/external_test.go. */
import { startProviderFake } from "../helpers/provider_fakes.ts";
import { defaultUser, REDIRECT_URI } from "../server/providers/_helpers.ts";
import { assert, assertError, conformance, ported } from "./_helpers.ts";

conformance("external_test.go", {}, [
  ported("TestSignupExternalUnsupported", async (e) => {
    const r = await e.call("GET", "/authorize?provider=external");
    assertError(r, 400, "validation_failed");
  }),
  ported("TestAuthorizeStripsReservedOAuthParams", async (e) => {
    const q = new URLSearchParams({
      provider: "github",
      client_id: "attacker-client-id",
      client_secret: "attacker-client-secret",
      redirect_uri: "https://evil.example/callback",
      response_type: "token",
      state: "attacker-controlled-state",
      code_verifier: "attacker-code-verifier",
    });
    const r = await e.call("GET", `/authorize?${q}`);
    assert.equal(r.status, 302, r.text);
    const p = new URL(r.headers.get("location")!).searchParams;
    assert.equal(p.get("client_id"), e.peer.clientId);
    assert.equal(p.get("redirect_uri"), REDIRECT_URI);
    assert.equal(p.get("response_type"), "code");
    assert.notEqual(p.get("state"), "attacker-controlled-state");
    assert.equal(p.get("client_secret"), null);
    assert.notEqual(p.get("code_verifier"), "attacker-code-verifier");
  }),
], {
  peers: async () => {
    const fake = await startProviderFake("github", { user: defaultUser() });
    return { env: fake.env(REDIRECT_URI), peer: fake, close: () => fake.close() };
  },
});
