/**
 * A GoTrue behaviour found broken (issue 38, item 9a):
 * `signInWithOtp({ email, options: { data } })` on an autoconfirm server
 * stored the data when it created the user, and lost it (reset to
 * `{email_verified: true}`) when the link or the code was used, because
 * only a confirmation or invite carried the sign-up's claim to what it keeps
 * (auth/confirm.ts). The magic link /otp sends the user it just created
 * carries that claim too, so the data survives, as in GoTrue; an account
 * someone else created still keeps nothing of theirs.
 */
import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { local, openLink, withEmail } from "../email/_helpers.ts";

const DATA = { name: "Ada", plan: "team" };

Deno.test("signInWithOtp data on an autoconfirm server survives the code and the link", async () => {
  await withEmail({ AUTHSVC_MAILER_AUTOCONFIRM: "true" }, async ({ srv, smtp }) => {
    // By the code (auth-js verifyOtp type email).
    const byCode = uniqueEmail("code");
    const client = authJsClient(srv.url);
    const sent = await client.signInWithOtp({ email: byCode, options: { data: DATA } });
    assert.equal(sent.error, null);
    const mail = await smtp.waitForMail(byCode);
    const v = await client.verifyOtp({ email: byCode, token: mail.code, type: "email" });
    assert.equal(v.error, null);
    assert.deepEqual(v.data.user?.user_metadata, { ...DATA, email_verified: true });

    // By the link.
    const byLink = uniqueEmail("link");
    const other = authJsClient(srv.url);
    assert.equal(
      (await other.signInWithOtp({ email: byLink, options: { data: DATA } })).error,
      null,
    );
    const linkMail = await smtp.waitForMail(byLink);
    const { location } = await openLink(local(srv, linkMail.link));
    const token = new URLSearchParams(location!.hash.slice(1)).get("access_token");
    assert.ok(token, location!.href);
    const me = await call(srv, "GET", "/user", { token });
    assert.deepEqual(me.body.user_metadata, { ...DATA, email_verified: true });
  });
});
