/**
 * Attack: a sign-in link whose `redirect_to` is the site's own host over
 * plain http, so the session in the URL fragment travels unencrypted to a
 * page anyone on the network can read or replace (issue 17, item 6). The
 * unit cases of the redirect check are in tests/server/email/redirect_test.ts.
 */
import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";
import { confirmedUser, fragment, local, openLink, withEmail } from "../email/_helpers.ts";

const SITE = "https://site.example.com";

Deno.test("a magic link cannot deliver the session to a plain-http page of an https site", async () => {
  await withEmail({ AUTHSVC_SITE_URL: SITE }, async ({ srv, smtp }) => {
    const email = `plain-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await confirmedUser(srv, email);
    const auth = authJsClient(srv.url);

    const sent = await auth.signInWithOtp({
      email,
      options: { emailRedirectTo: "http://site.example.com/welcome", shouldCreateUser: false },
    });
    assert.equal(sent.error, null);
    const mail = await smtp.waitForMail(email);
    const landed = await openLink(local(srv, mail.link));
    assert.equal(landed.status, 303);
    assert.equal(landed.location!.protocol, "https:", landed.location!.href);
    assert.equal(landed.location!.origin + landed.location!.pathname, `${SITE}/`);
    assert.ok(fragment(landed.location!).access_token, "the session goes to SITE_URL instead");

    // The same page over https is honoured (another user: one link per address per minute).
    const other = `secure-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await confirmedUser(srv, other);
    const again = await auth.signInWithOtp({
      email: other,
      options: { emailRedirectTo: "https://site.example.com/welcome", shouldCreateUser: false },
    });
    assert.equal(again.error, null);
    const secure = await openLink(local(srv, (await smtp.waitForMail(other)).link));
    assert.equal(secure.location!.href.split("#")[0], "https://site.example.com/welcome");
  });
});
