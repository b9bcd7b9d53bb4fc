/**
 * The console in a real browser: Debian's Chromium driven by playwright-core.
 * Signs in, finds a user, bans them and sees their sign-in refused, reads a
 * code from the development inbox and completes a sign-up with it, and sees
 * the activity chart drawn. Screenshots of each page go to
 * test-output/console/ (and to docs/images/ with UPDATE_SCREENSHOTS=1).
 *
 * Chromium is found at CHROMIUM_PATH, /usr/bin/chromium or
 * /usr/bin/chromium-browser; .ci/run installs Debian's package when missing.
 * Without a browser this test fails, unless CONSOLE_BROWSER_TESTS=skip.
 */
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { startTestServer, type TestServer } from "../../helpers/server.ts";

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

async function screenshot(page: import("playwright-core").Page, name: string) {
  await Deno.mkdir(OUT, { recursive: true });
  const png = await page.screenshot({ fullPage: true });
  await Deno.writeFile(new URL(`${name}.png`, OUT), png);
  if (Deno.env.get("UPDATE_SCREENSHOTS")) {
    await Deno.mkdir(DOCS, { recursive: true });
    await Deno.writeFile(new URL(`console-${name}.png`, DOCS), png);
  }
}

async function admin(srv: TestServer, method: string, path: string, body?: unknown) {
  const res = await srv.fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${await srv.serviceRoleToken()}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

async function passwordGrant(srv: TestServer, email: string, password: string) {
  const res = await srv.fetch("/token?grant_type=password", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  return { status: res.status, body: await res.json() };
}

const executablePath = browserPath();
const skip = !executablePath && Deno.env.get("CONSOLE_BROWSER_TESTS") === "skip";

Deno.test({
  name: "console in Chromium: sign in, ban a user, inbox code completes a sign-up, chart",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert.ok(
      executablePath,
      "Chromium not found (apt-get install chromium, or set CHROMIUM_PATH; CONSOLE_BROWSER_TESTS=skip skips)",
    );
    const srv = await startTestServer({ AUTHSVC_CONSOLE_ENABLED: "true" });
    const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    try {
      const tag = crypto.randomUUID().slice(0, 8);
      const opEmail = `operator-${tag}@example.com`;
      const victimEmail = `member-${tag}@example.com`;
      assert.equal(
        (await admin(srv, "POST", "/admin/users", {
          email: opEmail,
          password: "operator-password-1",
          email_confirm: true,
          role: "supabase_admin",
        })).status,
        200,
      );
      assert.equal(
        (await admin(srv, "POST", "/admin/users", {
          email: victimEmail,
          password: "member-password-1",
          email_confirm: true,
        })).status,
        200,
      );
      assert.equal((await passwordGrant(srv, victimEmail, "member-password-1")).status, 200);

      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("console", (m) => {
        // The first call asks whether a session exists: its 401 is the expected answer.
        if (m.type() === "error" && !/status of 401/.test(m.text())) errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(String(e)));

      // Sign in with the keyboard only.
      await page.goto(`${srv.url}/console/`);
      await page.waitForSelector("#email");
      await screenshot(page, "sign-in");
      await page.keyboard.type(opEmail); // #email has the focus
      await page.keyboard.press("Tab");
      await page.keyboard.type("operator-password-1");
      await page.keyboard.press("Enter");

      // The activity page: the chart is drawn, one line per series.
      await page.waitForSelector("svg.chart polyline[data-series=signins]");
      assert.equal(await page.locator("svg.chart polyline").count(), 4);
      const signins = await page.locator(".totals div").first().locator("strong").textContent();
      assert.ok(Number(signins) >= 2, `sign-ins counted: ${signins}`);
      await screenshot(page, "activity");

      // The cookies are HttpOnly: the page's script cannot read the session.
      const visible = await page.evaluate<string>("document.cookie");
      assert.doesNotMatch(visible, /authsvc_console_(at|rt)=/);
      assert.equal(await page.evaluate<number>("localStorage.length"), 0);

      // Find the user and open their page.
      await page.click("nav a[href='#/users']");
      await page.fill("#q", victimEmail);
      await page.press("#q", "Enter");
      await page.click(`a:has-text("${victimEmail}")`);
      await page.waitForSelector("h1:has-text('" + victimEmail + "')");
      assert.ok(await page.locator("text=No factors.").count() === 1);
      // The session the member opened above, with its user agent.
      await page.waitForSelector("td:has-text('Deno/')");
      await screenshot(page, "user");

      // Sign out everywhere: the member's refresh token stops working.
      const session = await passwordGrant(srv, victimEmail, "member-password-1");
      await page.click("button:text-is('Sign out everywhere')");
      await page.waitForSelector("text=No active sessions.");
      const refreshed = await srv.fetch("/token?grant_type=refresh_token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ refresh_token: session.body.refresh_token }),
      });
      assert.equal(refreshed.status, 400);
      await refreshed.body?.cancel();

      // Ban for a day: the user's own sign-in is refused from then on.
      await page.selectOption("#ban-duration", "24h");
      await page.click("button:text-is('Ban')");
      await page.waitForSelector("button:text-is('Unban')");
      const banned = await passwordGrant(srv, victimEmail, "member-password-1");
      assert.equal(banned.status, 400);
      assert.equal(banned.body.error_code, "user_banned");
      // ... and unbanning restores it.
      await page.click("button:text-is('Unban')");
      await page.waitForSelector("button:text-is('Ban')");
      assert.equal((await passwordGrant(srv, victimEmail, "member-password-1")).status, 200);

      // A sign-up elsewhere: its confirmation code shows in the development inbox.
      const newcomer = `newcomer-${tag}@example.com`;
      const signup = await srv.fetch("/signup", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: newcomer, password: "newcomer-password-1" }),
      });
      assert.equal(signup.status, 200);
      await signup.body?.cancel();
      await page.click("nav a[href='#/inbox']");
      const mail = page.locator(`article.mail[aria-label*="${newcomer}"]`);
      await mail.waitFor().catch(async (e) => {
        await screenshot(page, "failure");
        throw new Error(`${e}\n${await page.locator("main").innerText()}`);
      });
      const code = await mail.locator("[data-code]").getAttribute("data-code");
      assert.match(code ?? "", /^\d{6}$/);
      await screenshot(page, "inbox");
      const verify = await srv.fetch("/verify", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "email", email: newcomer, token: code }),
      });
      const verified = await verify.json();
      assert.equal(verify.status, 200, JSON.stringify(verified));
      assert.ok(verified.access_token);
      assert.ok(verified.user.email_confirmed_at);

      // The audit log shows the ban.
      await page.click("nav a[href='#/audit']");
      await page.waitForSelector("table tbody tr");
      assert.ok(await page.locator("tbody td:has-text('user_modified')").count() >= 1);
      await screenshot(page, "audit");

      // A phone-width screen: the users list still fits.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.click("nav a[href='#/users']");
      await page.waitForSelector("table");
      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth",
      );
      assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
      await screenshot(page, "users-phone");

      assert.deepEqual(errors, [], "no script errors or CSP violations in the page");
      await context.close();
    } finally {
      await browser.close();
      await srv.close();
    }
  },
});
