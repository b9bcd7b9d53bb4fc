/**
 * The console in a real browser: Debian's Chromium driven by playwright-core.
 * Two servers share one database, as two processes of one deployment do; the
 * browser uses the first. It checks what an operator sees: no navigation
 * before sign-in and after sign-out, the first-run text, a refused non-admin
 * attempt that is not counted as a sign-in, the activity chart summing both
 * servers and still there on a server started afterwards, ban and delete
 * asking first, the audit log in words with actors by e-mail, and inbox links
 * without the sentence's punctuation. Screenshots of each page go to
 * test-output/console/ (and to docs/images/ with UPDATE_SCREENSHOTS=1).
 *
 * Chromium is found at CHROMIUM_PATH, /usr/bin/chromium or
 * /usr/bin/chromium-browser; .ci/run installs Debian's package when missing.
 * Without a browser this test fails, unless CONSOLE_BROWSER_TESTS=skip.
 */
import assert from "node:assert/strict";
import { chromium, type Page } from "playwright-core";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { Client, consoleSignIn, createUser } from "./_helpers.ts";

const CANDIDATES = [
  Deno.env.get("CHROMIUM_PATH"),
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
];

function browserPath(): string | null {
  for (const p of CANDIDATES) {
    if (!p) continue;
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* next */ }
  }
  return null;
}

const OUT = new URL("../../../test-output/console/", import.meta.url);
const DOCS = new URL("../../../docs/images/", import.meta.url);

async function screenshot(page: Page, name: string) {
  await Deno.mkdir(OUT, { recursive: true });
  const png = await page.screenshot({ fullPage: true });
  await Deno.writeFile(new URL(`${name}.png`, OUT), png);
  if (Deno.env.get("UPDATE_SCREENSHOTS")) {
    await Deno.mkdir(DOCS, { recursive: true });
    await Deno.writeFile(new URL(`console-${name}.png`, DOCS), png);
  }
}

async function passwordGrant(srv: TestServer, email: string, password: string) {
  const res = await srv.fetch("/token?grant_type=password", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  return { status: res.status, body: await res.json() };
}

/** The "Sign-ins" total above the chart, once the chart is drawn. */
async function signInsShown(page: Page): Promise<number> {
  await page.waitForSelector("svg.chart polyline[data-series=signins]");
  return Number(await page.locator(".totals div").first().locator("strong").textContent());
}

/** Clicks `selector` and answers the confirmation it opens; the question it asked. */
async function clickAndAnswer(page: Page, selector: string, accept: boolean): Promise<string> {
  const asked = new Promise<string>((resolve) =>
    page.once("dialog", async (d) => {
      const question = d.message();
      await (accept ? d.accept() : d.dismiss());
      resolve(question);
    })
  );
  await page.click(selector);
  return await asked;
}

/** A confirmation mail whose link ends a sentence, as custom templates often write it. */
const TEMPLATE = `<h2>Confirm your sign-up</h2>
<p>Follow <a href="{{ .ConfirmationURL }}">{{ .ConfirmationURL }}</a>.</p>
<p>Or enter the code {{ .Token }}.</p>`;

const executablePath = browserPath();
const skip = !executablePath && Deno.env.get("CONSOLE_BROWSER_TESTS") === "skip";

Deno.test({
  name:
    "console in Chromium: navigation, first run, chart across servers, confirmations, audit, inbox",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert.ok(
      executablePath,
      "Chromium not found (apt-get install chromium, or set CHROMIUM_PATH; CONSOLE_BROWSER_TESTS=skip skips)",
    );
    const templates = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response(TEMPLATE, { headers: { "content-type": "text/html" } }),
    );
    const a = await startTestServer({
      AUTHSVC_CONSOLE_ENABLED: "true",
      AUTHSVC_MAILER_TEMPLATES_CONFIRMATION: `http://127.0.0.1:${templates.addr.port}/confirm.html`,
    });
    // A second process of the same deployment: same database and tables.
    const shared = { AUTHSVC_CONSOLE_ENABLED: "true", AUTHSVC_DB_NAMESPACE: a.config.db.namespace };
    shared.AUTHSVC_DB_NAMESPACE = shared.AUTHSVC_DB_NAMESPACE.replace(/_$/, "");
    const b = await startTestServer(shared);
    const servers = [a, b];
    const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    try {
      const tag = crypto.randomUUID().slice(0, 8);
      const opEmail = `operator-${tag}@example.com`;
      const memberEmail = `member-${tag}@example.com`;
      await createUser(a, opEmail, "operator-password-1", "supabase_admin");
      await createUser(a, memberEmail, "member-password-1");

      // Server B: the member signs in there, and an operator's look at B's chart writes
      // what B counted (its own sign-in too) to the shared table.
      assert.equal((await passwordGrant(b, memberEmail, "member-password-1")).status, 200);
      const onB = new Client(b);
      assert.equal((await consoleSignIn(onB, opEmail, "operator-password-1")).status, 200);
      assert.equal((await onB.json("/console/api/figures")).status, 200);

      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("console", (m) => {
        // The first call asks whether a session exists, the refused attempt is refused:
        // those 401 and 403 answers are expected.
        if (m.type() === "error" && !/status of 40[13]/.test(m.text())) errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(String(e)));

      // Before sign-in: no navigation; the first-run text says how to get an account.
      await page.goto(`${a.url}/console/`);
      await page.waitForSelector("#email");
      assert.equal(await page.locator("#nav").isVisible(), false, "no navigation before sign-in");
      await page.click("#first-run summary");
      const firstRun = await page.locator("#first-run").innerText();
      assert.match(firstRun, /admin create-user --email you@example\.com --role supabase_admin/);
      await screenshot(page, "sign-in");

      // A member's attempt is refused, says what would let them in, and opens nothing.
      await page.fill("#email", memberEmail);
      await page.fill("#password", "member-password-1");
      await page.press("#password", "Enter");
      await page.waitForSelector("#status.error");
      assert.match(await page.locator("#status").innerText(), /may not use the console.*set-role/);
      assert.equal(await page.locator("#nav").isVisible(), false);

      // The operator signs in with the keyboard only.
      await page.fill("#email", "");
      await page.fill("#password", "");
      await page.focus("#email");
      await page.keyboard.type(opEmail);
      await page.keyboard.press("Tab");
      await page.keyboard.type("operator-password-1");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#nav a[href='#/users']", { state: "visible" });

      // The chart: one line per series; the sign-ins of both servers (the member's and
      // the operator's on B, the operator's here), not the refused attempt.
      assert.equal(await signInsShown(page), 3);
      assert.equal(await page.locator("svg.chart polyline").count(), 4);
      await screenshot(page, "activity");

      // The cookies are HttpOnly: the page's script cannot read the session.
      const visible = await page.evaluate<string>("document.cookie");
      assert.doesNotMatch(visible, /authsvc_console_(at|rt)=/);
      assert.equal(await page.evaluate<number>("localStorage.length"), 0);

      // Find the member and open their page.
      await page.click("nav a[href='#/users']");
      await page.fill("#q", memberEmail);
      await page.press("#q", "Enter");
      await page.click(`a:has-text("${memberEmail}")`);
      await page.waitForSelector(`h1:has-text('${memberEmail}')`);
      assert.equal(await page.locator("text=No factors.").count(), 1);
      await page.waitForSelector("td:has-text('Deno/')"); // the session opened on B
      await screenshot(page, "user");

      // Sign out everywhere: the member's refresh token stops working.
      const session = await passwordGrant(a, memberEmail, "member-password-1");
      await page.click("button:text-is('Sign out everywhere')");
      await page.waitForSelector("text=No active sessions.");
      const refreshed = await a.fetch("/token?grant_type=refresh_token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ refresh_token: session.body.refresh_token }),
      });
      assert.equal(refreshed.status, 400);
      await refreshed.body?.cancel();

      // Ban asks first: declined, nothing happens.
      await page.selectOption("#ban-duration", "24h");
      const banQuestion = await clickAndAnswer(page, "button:text-is('Ban')", false);
      assert.match(banQuestion, new RegExp(`Ban ${memberEmail} for 1 day\\?`));
      assert.equal((await passwordGrant(a, memberEmail, "member-password-1")).status, 200);
      // Accepted: the member's sign-in is refused from then on.
      await clickAndAnswer(page, "button:text-is('Ban')", true);
      await page.waitForSelector("button:text-is('Unban')");
      const banned = await passwordGrant(a, memberEmail, "member-password-1");
      assert.equal(banned.status, 400);
      assert.equal(banned.body.error_code, "user_banned");
      await page.click("button:text-is('Unban')");
      await page.waitForSelector("button:text-is('Ban')");
      assert.equal((await passwordGrant(a, memberEmail, "member-password-1")).status, 200);

      // A sign-up: its mail in the development inbox, the link without the sentence's dot.
      const newcomer = `newcomer-${tag}@example.com`;
      const signup = await a.fetch("/signup", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: newcomer, password: "newcomer-password-1" }),
      });
      assert.equal(signup.status, 200);
      await signup.body?.cancel();
      await page.click("nav a[href='#/inbox']");
      const mail = page.locator(`article.mail[aria-label*="${newcomer}"]`);
      await mail.waitFor();
      assert.match(
        await mail.locator("pre").textContent() ?? "",
        /\/verify\?[^\s]+\.\n/,
        "the mail's text ends the sentence after the link",
      );
      const hrefs = await mail.locator("li a").evaluateAll((els) =>
        els.map((e) => e.getAttribute("href") ?? "")
      );
      assert.equal(hrefs.length, 1, JSON.stringify(hrefs));
      assert.doesNotMatch(hrefs[0], /[.,;:!?)]$/);
      assert.match(await mail.locator("[data-code]").getAttribute("data-code") ?? "", /^\d{6}$/);
      await screenshot(page, "inbox");
      // The link as shown confirms the address (on this server's address).
      const link = new URL(hrefs[0]);
      const verify = await a.fetch(`${link.pathname}${link.search}`, { redirect: "manual" });
      await verify.body?.cancel();
      assert.equal(verify.status, 303);
      assert.match(verify.headers.get("location") ?? "", /#access_token=/);

      // The audit log in words, each action's actor by e-mail.
      await page.click("nav a[href='#/audit']");
      await page.waitForSelector("table tbody tr");
      const rows = await page.locator("tbody tr").evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? ""))
      );
      const row = (words: string) => rows.filter((r) => r[1].startsWith(words));
      assert.ok(row("Changed a user").length >= 2, "the ban and the unban");
      for (const r of row("Changed a user")) {
        assert.equal(r[2], opEmail, "done by the operator");
        assert.ok(r[1].includes(memberEmail), "to the member");
      }
      assert.ok(row("Signed in").some((r) => r[2] === memberEmail));
      assert.ok(!rows.some((r) => /^[a-z_]+$/.test(r[1])), "no action shown as its code");
      await page.selectOption("#f-action", "user_modified");
      await page.click("button:text-is('Filter')");
      // The filtered list has replaced the whole one: only "Changed a user" is left.
      await page.waitForFunction(() => {
        // deno-lint-ignore no-explicit-any
        const cells = (globalThis as any).document.querySelectorAll("tbody td[data-action]");
        return cells.length > 0 &&
          // deno-lint-ignore no-explicit-any
          [...cells].every((td: any) => td.getAttribute("data-action") === "user_modified");
      });
      await screenshot(page, "audit");

      // Delete asks first: declined, the member stays; accepted, they are gone.
      await page.click("nav a[href='#/users']");
      await page.fill("#q", memberEmail);
      await page.press("#q", "Enter");
      await page.click(`a:has-text("${memberEmail}")`);
      await page.waitForSelector(`h1:has-text('${memberEmail}')`);
      const deleteQuestion = await clickAndAnswer(page, "button:text-is('Delete user')", false);
      assert.match(deleteQuestion, new RegExp(`Delete ${memberEmail}\\? This cannot be undone`));
      assert.equal((await passwordGrant(a, memberEmail, "member-password-1")).status, 200);
      await clickAndAnswer(page, "button:text-is('Delete user')", true);
      await page.waitForSelector("#q");
      assert.equal((await passwordGrant(a, memberEmail, "member-password-1")).status, 400);

      // A phone-width screen: the users list still fits.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForSelector("table");
      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth",
      );
      assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
      await screenshot(page, "users-phone");
      await page.setViewportSize({ width: 1280, height: 800 });

      // The chart's count now, and on a server started afterwards (nothing in its memory):
      // the same, read from the database.
      await page.click("nav a[href='#/']");
      const here = await signInsShown(page);
      assert.ok(here >= 7, `sign-ins so far: ${here}`);
      const c = await startTestServer(shared);
      servers.push(c);
      await page.goto(`${c.url}/console/`); // the session cookies hold on the same host
      assert.equal(await signInsShown(page), here);

      // Sign out: the navigation goes with the session.
      await page.click("#signout");
      await page.waitForSelector("#email");
      assert.equal(await page.locator("#nav").isVisible(), false, "no navigation after sign-out");

      assert.deepEqual(errors, [], "no script errors or CSP violations in the page");
      await context.close();
    } finally {
      await browser.close();
      for (const s of servers.reverse()) await s.close();
      await templates.shutdown();
    }
  },
});
