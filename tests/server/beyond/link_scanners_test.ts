/**
 * E-mail links that mail scanners cannot use up (issue 44 item 2): supabase/auth#1214, open since
 * 2023. Security scanners (Microsoft Defender's Safe Links, Mimecast, Proofpoint) and chat link
 * previews open every link of a mail before the person does: a HEAD, then one or more GETs without
 * cookies and without any prefetch header. GoTrue signs in on the first GET, so the person's own
 * click finds the link used ("Email link is invalid or has expired").
 *
 * With AUTHSVC_MAILER_LINK_CONFIRMATION_PAGE (off by default, so GoTrue's behaviour is unchanged)
 * GET /verify shows a page whose button POSTs the link; the scanners' sequence leaves the token
 * for the person, whose click (the page, then its button) signs in, in the implicit and in the PKCE
 * flow. Every default template offers the code as well as the link.
 */
import assert from "node:assert/strict";
import { confirmedUser, fragment, getUser, local, withEmail } from "../email/_helpers.ts";
import { call } from "../../helpers/http.ts";
import { sha256Base64url } from "../../../server/util/crypto.ts";

const SAFE_LINKS_UA =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 (Safe Links scanner)";
const PREVIEW_UA = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)";

/** What the scanners do with a link before the person sees the mail: HEAD, GET, GET. */
async function scan(link: string): Promise<number[]> {
  const statuses: number[] = [];
  for (
    const [method, ua] of [["HEAD", SAFE_LINKS_UA], ["GET", SAFE_LINKS_UA], ["GET", PREVIEW_UA]]
  ) {
    const res = await fetch(link, { method, redirect: "manual", headers: { "user-agent": ua } });
    await res.body?.cancel();
    statuses.push(res.status);
  }
  return statuses;
}

/** The page's button as a browser submits it: a form POST to the page's own URL. */
function pressButton(link: string): Promise<Response> {
  return fetch(link, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "confirm=1",
  });
}

/** The person's click: the page, then its button (a form POST to the page's own URL). */
async function click(link: string): Promise<{ page: string; location: URL }> {
  const get = await fetch(link, { redirect: "manual" });
  const page = await get.text();
  assert.equal(get.status, 200);
  assert.match(get.headers.get("content-type") ?? "", /^text\/html/);
  assert.equal(get.headers.get("cache-control"), "no-store");
  assert.equal(get.headers.get("referrer-policy"), "no-referrer");
  assert.match(page, /<form method="post">/);
  const post = await pressButton(link);
  await post.body?.cancel();
  assert.equal(post.status, 303);
  return { page, location: new URL(post.headers.get("location")!) };
}

const PAGE = { AUTHSVC_MAILER_LINK_CONFIRMATION_PAGE: "true", AUTHSVC_SMTP_LINK_FREQUENCY: "0" };

Deno.test("auth#1214: HEAD, GET, GET by scanners, then the person's click signs in", async () => {
  await withEmail(PAGE, async ({ srv, smtp }) => {
    await confirmedUser(srv, "scanned@example.com");
    const r = await call(srv, "POST", "/magiclink", { body: { email: "scanned@example.com" } });
    assert.equal(r.status, 200);
    const mail = await smtp.waitForMail("scanned@example.com");
    assert.match(mail.text, new RegExp(`code: ${mail.code}`), "the mail offers the code too");
    const link = local(srv, mail.link);
    assert.deepEqual(await scan(link), [200, 200, 200], "scanners get the page, no redirect");
    const { page, location } = await click(link);
    assert.match(page, /Sign in/);
    const f = fragment(location);
    assert.equal(f.type, "magiclink");
    assert.ok(f.access_token, location.href);
    const me = await getUser(srv, f.access_token);
    assert.equal(me.email, "scanned@example.com");
    // The link worked once: a second press of the button (a replay) gets the expired-link error.
    const again = await pressButton(link);
    await again.body?.cancel();
    assert.match(again.headers.get("location") ?? "", /error_code=otp_expired/);
  });
});

Deno.test("auth#1214: the page keeps the PKCE flow: the button's redirect carries the code", async () => {
  await withEmail(PAGE, async ({ srv, smtp }) => {
    await confirmedUser(srv, "pkce-scan@example.com");
    const verifier = crypto.randomUUID() + crypto.randomUUID();
    const r = await call(srv, "POST", "/magiclink", {
      body: {
        email: "pkce-scan@example.com",
        code_challenge: sha256Base64url(verifier),
        code_challenge_method: "s256",
      },
    });
    assert.equal(r.status, 200);
    const link = local(srv, (await smtp.waitForMail("pkce-scan@example.com")).link);
    await scan(link);
    const { location } = await click(link);
    const code = location.searchParams.get("code");
    assert.ok(code, location.href);
    const t = await call(srv, "POST", "/token?grant_type=pkce", {
      body: { auth_code: code, code_verifier: verifier },
    });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.equal((t.body.user as { email: string }).email, "pkce-scan@example.com");
  });
});

Deno.test("auth#1214: without the setting, GoTrue's behaviour: a scanner's GET uses the link up", async () => {
  await withEmail({ AUTHSVC_SMTP_LINK_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    await confirmedUser(srv, "plain@example.com");
    await call(srv, "POST", "/magiclink", { body: { email: "plain@example.com" } });
    const link = local(srv, (await smtp.waitForMail("plain@example.com")).link);
    assert.deepEqual(await scan(link), [200, 303, 303]);
    const person = await fetch(link, { redirect: "manual" });
    await person.body?.cancel();
    assert.match(person.headers.get("location") ?? "", /error_code=otp_expired/);
    // A form POST is not a way in when the page is off: it is a JSON endpoint then.
    const post = await pressButton(link);
    await post.body?.cancel();
    assert.equal(post.status, 400);
  });
});
