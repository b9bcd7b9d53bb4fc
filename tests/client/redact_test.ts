/** The one redaction function, and the debug log that uses it (OAUTH_DEBUG). */
import assert from "node:assert/strict";
import { Client, config, configure, redact } from "../../mod.ts";
import { json, recordingLogger, startStub } from "./_stub.ts";

// Real-looking secrets of several providers.
const GOOGLE_SECRET = "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";
const ACCESS = "ya29.a0AfB_byDqL9Zk3xV7mN2pQ8rS4tU6wY1zA5cE0gH3jK";
const REFRESH = "1//0gXq7LmN9pRsT2uVwX4yZ6aB8cD-L9Ir4HfK3mPq";
const ID_TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiIxMTAxNjkifQ.c2lnbmF0dXJl";
const GH_CODE = "a1b2c3d4e5f6a7b8c9d0";
const PASSWORD = "correct horse battery staple!";

function assertClean(text: string) {
  for (const secret of [GOOGLE_SECRET, ACCESS, REFRESH, ID_TOKEN, GH_CODE, PASSWORD]) {
    assert.ok(!text.includes(secret), `"${secret}" leaked in: ${text}`);
    assert.ok(!text.includes(encodeURIComponent(secret)), `encoded "${secret}" leaked in: ${text}`);
  }
}

Deno.test("redact: objects, JSON, form bodies, URLs, headers and free text", () => {
  const label = config.filteredLabel;
  assert.deepEqual(
    redact({
      access_token: ACCESS,
      nested: { Refresh_Token: REFRESH, keep: "me" },
      list: [{ password: PASSWORD }],
    }),
    {
      access_token: label,
      nested: { Refresh_Token: label, keep: "me" },
      list: [{ password: label }],
    },
  );
  const jsonText = redact(JSON.stringify({ id_token: ID_TOKEN, token_type: "Bearer" })) as string;
  assert.deepEqual(JSON.parse(jsonText), { id_token: label, token_type: "Bearer" });
  const form = redact(
    `grant_type=authorization_code&code=${GH_CODE}&client_secret=${
      encodeURIComponent(GOOGLE_SECRET)
    }&redirect_uri=x`,
  ) as string;
  assert.equal(
    form,
    "grant_type=authorization_code&code=[FILTERED]&client_secret=[FILTERED]&redirect_uri=x",
  );
  const url = redact(
    `https://user:${
      encodeURIComponent(PASSWORD)
    }@api.example.com/cb?code=${GH_CODE}&state=s#access_token=${ACCESS}&x=1`,
  ) as string;
  assertClean(url);
  assert.match(url, /state=s/);
  const headers = redact(new Headers({ Authorization: `Bearer ${ACCESS}`, "X-Id": "7" }));
  assert.deepEqual(headers, { authorization: label, "x-id": "7" });
  const free = redact(
    `request failed: Authorization: Basic ${
      btoa(`id:${GOOGLE_SECRET}`)
    } token=${ACCESS} "refresh_token": "${REFRESH}" password: ${PASSWORD}`,
  ) as string;
  assertClean(free);
  assert.ok(!free.includes(btoa(`id:${GOOGLE_SECRET}`)));
  assert.match(free, /^request failed: /);
  assert.equal(
    redact("nothing secret here, code review at 10"),
    "nothing secret here, code review at 10",
  );
});

Deno.test("redact: literal secrets are removed wherever they appear", () => {
  const text = redact(`weird echo ${GOOGLE_SECRET} and ${encodeURIComponent(PASSWORD)}`, [
    GOOGLE_SECRET,
    PASSWORD,
  ]) as string;
  assertClean(text);
});

Deno.test("redact: keys appended to filteredDebugKeys and a custom label are used", () => {
  const saved = { label: config.filteredLabel, keys: [...config.filteredDebugKeys] };
  configure((c) => {
    c.filteredLabel = "***";
    c.filteredDebugKeys.push("x_api_key");
  });
  try {
    assert.deepEqual(redact({ x_api_key: "k-123456", access_token: "a" }), {
      x_api_key: "***",
      access_token: "***",
    });
  } finally {
    configure((c) => {
      c.filteredLabel = saved.label;
      c.filteredDebugKeys = saved.keys;
    });
  }
  assert.deepEqual(redact({ x_api_key: "k-123456" }), { x_api_key: "k-123456" });
  assert.throws(() => configure((c) => void (c.filteredLabel = 5 as never)), /"filteredLabel"/);
  assert.equal(config.filteredLabel, "[FILTERED]", "a rejected configuration changes nothing");
  assert.throws(() => configure("x" as never), /"fn"/);
});

Deno.test("debug log: requests and responses with bodies, every secret filtered", async () => {
  await using stub = startStub(() =>
    json({
      access_token: ACCESS,
      refresh_token: REFRESH,
      id_token: ID_TOKEN,
      token_type: "Bearer",
      expires_in: 3599,
    })
  );
  const logger = recordingLogger();
  const client = new Client("web-client", GOOGLE_SECRET, { site: stub.url, logger, debug: true });
  const token = await client.authCode.getToken(GH_CODE, {
    redirect_uri: "https://app/cb",
    code_verifier: "v".repeat(43),
  });
  await token.get("/userinfo", { params: { access_token: ACCESS } });
  const basic = new Client("web-client", GOOGLE_SECRET, {
    site: stub.url,
    logger,
    debug: true,
    authScheme: "request_body",
  });
  await basic.password.getToken("alice", PASSWORD);
  const log = logger.lines.join("\n");
  assertClean(log);
  assert.ok(!log.includes("v".repeat(43)), "code_verifier filtered");
  assert.match(log, /oauth2 request: POST http:\/\/127\.0\.0\.1:\d+\/oauth\/token/);
  assert.match(log, /body: .*grant_type=authorization_code/);
  assert.match(log, /body: .*&code=\[FILTERED\]/);
  assert.match(log, /\?access_token=\[FILTERED\]/, "in the URL of the request with the token");
  assert.ok(!log.includes("%5BFILTERED%5D"), "the label is never percent-encoded");
  assert.match(log, /oauth2 response: 200/);
  assert.match(log, /"token_type":"Bearer"/);
  assert.match(log, /"expires_in":3599/);
  assert.match(log, /"authorization":"\[FILTERED\]"/);
  assert.match(log, /username=alice/);
  assert.equal(logger.lines.length, 6);
});

Deno.test("debug log is off unless OAUTH_DEBUG=true; reading the environment never fails", async () => {
  await using stub = startStub(() => json({ access_token: "t" }));
  const previous = Deno.env.get("OAUTH_DEBUG");
  try {
    Deno.env.delete("OAUTH_DEBUG");
    const quiet = recordingLogger();
    await new Client("id", "s", { site: stub.url, logger: quiet }).clientCredentials.getToken();
    assert.equal(quiet.lines.length, 0);
    Deno.env.set("OAUTH_DEBUG", "true");
    const loud = recordingLogger();
    await new Client("id", "s", { site: stub.url, logger: loud }).clientCredentials.getToken();
    assert.equal(loud.lines.length, 2);
  } finally {
    if (previous === undefined) Deno.env.delete("OAUTH_DEBUG");
    else Deno.env.set("OAUTH_DEBUG", previous);
  }
});

Deno.test("without env permission the library works and stays quiet", async () => {
  const code = `
    import { Client } from ${JSON.stringify(new URL("../../mod.ts", import.meta.url).href)};
    const logs = [];
    const logger = { debug: (m) => logs.push(m), info() {}, warn() {}, error() {} };
    const c = new Client("id", "s", { site: "https://x.invalid", logger,
      connectionOpts: { fetch: () => Promise.resolve(Response.json({ access_token: "t" })) } });
    const t = await c.clientCredentials.getToken();
    console.log(JSON.stringify({ token: t.token, logs: logs.length }));
  `;
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(file, code);
  const root = new URL("../..", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--no-check", `--allow-read=${root},${file}`, file],
    env: { OAUTH_DEBUG: "true", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(file);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), { token: "t", logs: 0 });
});

Deno.test("debug log: camelCase token fields and dashed header names are filtered too", async () => {
  await using stub = startStub(() =>
    json({ accessToken: ACCESS, refreshToken: REFRESH, idToken: ID_TOKEN, expiresIn: 3599 })
  );
  const before = [...config.filteredDebugKeys];
  configure((c) => c.filteredDebugKeys.push("x_api_key"));
  try {
    const logger = recordingLogger();
    const client = new Client("web-client", GOOGLE_SECRET, { site: stub.url, logger, debug: true });
    const token = await client.clientCredentials.getToken({
      headers: { "X-Api-Key": "key-0123456789abcdef" },
    });
    assert.equal(token.token, ACCESS);
    const log = logger.lines.join("\n");
    assertClean(log);
    assert.ok(!log.includes("key-0123456789abcdef"), log);
    assert.match(log, /"x-api-key":"\[FILTERED\]"/);
    assert.match(log, /"accessToken":"\[FILTERED\]"/);
    assert.match(log, /"expiresIn":3599/);
    assert.equal(
      redact("accessToken=abcdef123 Access-Token: abcdef456"),
      "accessToken=[FILTERED] Access-Token: [FILTERED]",
    );
  } finally {
    configure((c) => c.filteredDebugKeys.splice(0, Infinity, ...before));
  }
});

Deno.test("redact: the label is written as it is in form bodies, URLs and JSON alike", () => {
  const form = redact("code=abc&state=s%20t&password=p") as string;
  assert.equal(form, "code=[FILTERED]&state=s+t&password=[FILTERED]");
  const url = redact("https://app.example/cb?code=abc&state=x#access_token=t&token_type=Bearer");
  assert.equal(
    url,
    "https://app.example/cb?code=[FILTERED]&state=x#access_token=[FILTERED]&token_type=Bearer",
  );
  assert.equal(redact('{"code":"abc"}'), '{"code":"[FILTERED]"}');
  const saved = config.filteredLabel;
  try {
    configure((c) => void (c.filteredLabel = "<hidden>"));
    assert.equal(redact("code=abc&x=1"), "code=<hidden>&x=1");
  } finally {
    configure((c) => void (c.filteredLabel = saved));
  }
});
