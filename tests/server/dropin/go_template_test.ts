/**
 * Go template forms in mail templates (GoTrue's default and common custom
 * templates): rendered through a real sign-up and SMTP server; anything else
 * refused when the template is loaded, never mailed raw.
 */
import assert from "node:assert/strict";
import { BASE_ENV, startTestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { ConfigError, readConfig } from "../../../server/config/mod.ts";
import { execute, parseTemplate, templateProblem } from "../../../server/mail/go_template.ts";
import { call, email } from "./_helpers.ts";

const render = (t: string, vars: unknown) => execute(parseTemplate(t), vars, (s) => s);

Deno.test("if / else if / else / end with eq, ne, and, or, not, trim markers", () => {
  const t =
    `{{- if eq .Data.lang "de" "at" -}} Hallo {{- else if and .Data.vip (not .Data.muted) }}Dear VIP{{ else if or (ne .Email "") .Phone }}Hi {{ .Email }}{{ else }}Hello{{ end }}`;
  assert.equal(render(t, { Data: { lang: "at" } }), "Hallo");
  assert.equal(render(t, { Data: { vip: true, muted: false } }), "Dear VIP");
  assert.equal(render(t, { Data: { vip: true, muted: true }, Email: "a@x.test" }), "Hi a@x.test");
  assert.equal(render(t, { Data: {} }), "Hello");
  assert.equal(render("{{/* a comment */}}{{ .Missing.Deep }}!", {}), "!");
  // GoTrue's default confirmation template form
  assert.equal(
    render(`<a href="{{ .SiteURL }}/auth/confirm?token_hash={{ .TokenHash }}&type=email">x</a>`, {
      SiteURL: "https://app.test",
      TokenHash: "abc",
    }),
    `<a href="https://app.test/auth/confirm?token_hash=abc&type=email">x</a>`,
  );
});

Deno.test("anything else is refused with a message naming it", () => {
  const cases: [string, RegExp][] = [
    ["{{ range .Items }}x{{ end }}", /range/],
    ["{{ .Email | upper }}", /pipelines/],
    ['{{ printf "%s" .Email }}', /printf/],
    ["{{ $x := 1 }}", /\$/],
    ["{{ if .A }}open", /without \{\{ end \}\}/],
    ["{{ end }}", /without \{\{ if \}\}/],
    ["{{ with .Data }}{{ end }}", /with/],
    ["{{ .Email ", /unclosed/],
  ];
  for (const [t, re] of cases) {
    const why = templateProblem(t);
    assert.ok(why && re.test(why), `${t}: ${why}`);
  }
  assert.throws(
    () => readConfig({ ...BASE_ENV, AUTHSVC_MAILER_SUBJECTS_INVITE: "Join {{ .Email | upper }}" }),
    (e) => e instanceof ConfigError && /AUTHSVC_MAILER_SUBJECTS_INVITE: pipelines/.test(e.message),
  );
});

Deno.test("a sign-up mail renders a Go-template body; a bad template falls back, never raw", async () => {
  const smtp = await startSmtp();
  const ac = new AbortController();
  const tpl = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} },
    (req) =>
      new Response(
        new URL(req.url).pathname === "/confirm.html"
          ? `{{ if eq .Data.lang "de" }}<p>Hallo {{ .Data.name }}</p>{{ else }}<p>Hello</p>{{ end }}<a href="{{ .ConfirmationURL }}">ok</a> {{ .Token }}`
          : `{{ range .Data }}<p>{{ . }}</p>{{ end }}<a href="{{ .ConfirmationURL }}">ok</a> {{ .Token }}`,
      ),
  );
  const base = `http://127.0.0.1:${tpl.addr.port}`;
  const srv = await startTestServer({
    ...smtp.env,
    AUTHSVC_MAILER_TEMPLATES_CONFIRMATION: `${base}/confirm.html`,
    AUTHSVC_MAILER_TEMPLATES_RECOVERY: `${base}/recovery.html`,
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION:
      `{{ if eq .Data.lang "de" }}Bestätigen{{ else }}Confirm{{ end }}`,
  });
  try {
    const a = email("de");
    let r = await call(srv, "POST", "/signup", {
      email: a,
      password: "secret-pw-1",
      data: { lang: "de", name: "<Grete>" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const m = await smtp.waitForMail(a);
    assert.equal(m.subject, "Bestätigen");
    assert.ok(m.html.includes("<p>Hallo &lt;Grete&gt;</p>"), m.html);
    assert.ok(!m.html.includes("{{") && !m.text.includes("{{"));
    // a template using {{ range }}: refused when loaded, the default body is sent instead
    r = await call(srv, "POST", "/recover", { email: a });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const rec = await smtp.waitForMail(a);
    assert.ok(!rec.html.includes("{{") && !rec.text.includes("{{"), rec.html);
    assert.match(rec.text, /Reset Password/);
    assert.ok(srv.logs.some((l) => l.includes("mail template refused") && l.includes("range")));
  } finally {
    await srv.close();
    await smtp.close();
    ac.abort();
    await tpl.finished;
  }
});
