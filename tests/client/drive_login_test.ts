/** driveLogin beyond oidc-provider: a Keycloak-shaped login page (username field, submit named "login", entity-encoded action, path cookies). */
import assert from "node:assert/strict";
import { driveLogin } from "../helpers/oidc_provider.ts";
Deno.test("driveLogin submits a Keycloak-shaped login form and returns the code", async () => {
  let posted = "";
  const s = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req): Promise<Response> => {
      const u = new URL(req.url);
      if (u.pathname === "/realms/r/protocol/openid-connect/auth") {
        return new Response(
          `<html><form id="kc-form-login" onsubmit="login.disabled = true; return true;" action="http://127.0.0.1:${s.addr.port}/realms/r/login-actions/authenticate?session_code=abc&amp;execution=e1&amp;client_id=app&amp;tab_id=t1" method="post">
      <input tabindex="1" id="username" class="pf-c-form-control" name="username" value="" type="text" autofocus autocomplete="off" />
      <input tabindex="2" id="password" class="pf-c-form-control" name="password" type="password" autocomplete="off" />
      <input type="hidden" id="id-hidden-input" name="credentialId"/>
      <input tabindex="4" class="pf-c-button" name="login" id="kc-login" type="submit" value="Sign In"/>
      </form></html>`,
          {
            headers: {
              "content-type": "text/html",
              "set-cookie": "AUTH_SESSION_ID=xyz; Path=/realms/r/; HttpOnly",
            },
          },
        );
      }
      if (u.pathname === "/realms/r/login-actions/authenticate") {
        posted = `${u.search} ${await req.text()} ${req.headers.get("cookie")}`;
        return new Response(null, {
          status: 302,
          headers: { location: "http://127.0.0.1:9/cb?state=s1&session_state=x&code=kc-code" },
        });
      }
      return new Response("nope", { status: 404 });
    },
  );
  let r;
  try {
    r = await driveLogin(
      `http://127.0.0.1:${s.addr.port}/realms/r/protocol/openid-connect/auth?client_id=app&redirect_uri=${
        encodeURIComponent("http://127.0.0.1:9/cb")
      }&response_type=code&state=s1`,
      { login: "bob", password: "pw" },
    );
  } finally {
    await s.shutdown();
  }
  assert.equal(r.code, "kc-code");
  assert.equal(r.state, "s1");
  assert.match(posted, /session_code=abc&execution=e1/);
  assert.match(posted, /username=bob&password=pw&credentialId=&login=Sign\+In/);
  assert.match(posted, /AUTH_SESSION_ID=xyz/);
});
