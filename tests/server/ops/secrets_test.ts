import assert from "node:assert/strict";
import { startTestServer, TEST_JWT_SECRET } from "../../helpers/server.ts";
import { startFakeCaptcha } from "./_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

Deno.test("logs: no password, token, code or secret appears in any line at debug level", async () => {
  const captchaSecret = "0x-captcha-secret-never-logged";
  const captchaToken = "P1_captcha-token-never-logged";
  const fake = startFakeCaptcha("hcaptcha", { secret: captchaSecret, goodToken: captchaToken });
  const srv = await startTestServer({
    LOG_LEVEL: "debug",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: captchaSecret,
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
    AUTHSVC_TRACING_ENABLED: "false",
  });
  const secrets: string[] = [captchaSecret, captchaToken, TEST_JWT_SECRET];
  try {
    const address = uniqueEmail("ops");
    const password = "Correct-Horse-Battery-9";
    secrets.push(password);
    const up = await call(srv, "POST", "/signup", {
      body: {
        email: address,
        password,
        captcha_token: captchaToken,
      },
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    secrets.push(String(up.body.access_token), String(up.body.refresh_token));

    const wrong = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: address,
        password: "Wrong-Password-Guess-1",
        captcha_token: captchaToken,
      },
    });
    assert.equal(wrong.status, 400);
    secrets.push("Wrong-Password-Guess-1");

    const inn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: address,
        password,
        captcha_token: captchaToken,
      },
    });
    assert.equal(inn.status, 200);
    secrets.push(String(inn.body.access_token), String(inn.body.refresh_token));

    const refreshed = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: inn.body.refresh_token,
      },
    });
    assert.equal(refreshed.status, 200);
    secrets.push(String(refreshed.body.access_token), String(refreshed.body.refresh_token));

    // A token in the query string and a malformed bearer token.
    const verifyToken = "pkce_0123456789abcdef0123456789abcdef";
    secrets.push(verifyToken);
    await call(
      srv,
      "GET",
      `/verify?type=signup&token=${verifyToken}&redirect_to=http://localhost:3000`,
    );
    const badBearer = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.forged-signature-value";
    secrets.push(badBearer);
    await call(srv, "GET", "/user", { headers: { authorization: `Bearer ${badBearer}` } });
    await call(srv, "POST", "/logout", {
      headers: {
        authorization: `Bearer ${refreshed.body.access_token}`,
      },
    });

    const text = srv.logs.join("\n");
    assert.ok(srv.logs.length >= 7, "requests were logged");
    for (const s of secrets) {
      assert.ok(s.length >= 8);
      assert.ok(!text.includes(s), `a log line contains a secret (${s.slice(0, 6)}...)`);
    }
    // JWTs in general: no three-part base64url token of any kind.
    assert.doesNotMatch(text, /eyJ[\w-]+\.[\w-]+\.[\w-]+/);
  } finally {
    await srv.close();
    await fake.close();
  }
});
