/**
 * Mail in the user's language (issue 44 item 5): supabase/auth#80, one set of mail templates for
 * every user whatever their language, open since 2021.
 *
 * Subjects and templates per locale, GoTrue-style names with a locale suffix
 * (`AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_DE`, `..._TEMPLATES_CONFIRMATION_FR`, or GoTrue's own
 * `GOTRUE_MAILER_...`), chosen from the user's user_metadata.locale, then the request's
 * Accept-Language, then the default texts. Everything goes through the real API and a real SMTP
 * server; the templates are served over HTTP as the operator's would be, and keep GoTrue's
 * variables ({{ .ConfirmationURL }}, {{ .Token }}, {{ .Data.* }}), so the link and the code of
 * each mail still sign the user in.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { settingNameWarnings } from "../../../server/config/names.ts";
import { BASE_ENV } from "../../helpers/server.ts";

const TEMPLATES: Record<string, string> = {
  "/de/confirm.html": `<h2>Willkommen, {{ .Data.name }}!</h2>
<p><a href="{{ .ConfirmationURL }}">Registrierung bestätigen</a></p>
<p>Oder gib den Code ein: {{ .Token }}</p>`,
  "/fr/confirm.html": `<h2>Bienvenue{{ if .Data.name }}, {{ .Data.name }}{{ end }} !</h2>
<p><a href="{{ .ConfirmationURL }}">Confirmer l'inscription</a></p>
<p>Ou saisissez le code : {{ .Token }}</p>`,
};

Deno.test("auth#80: mails in the user's language: user_metadata.locale, then Accept-Language, then the default", async () => {
  const smtp = await startSmtp();
  const ac = new AbortController();
  const files = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} },
    (req) => {
      const body = TEMPLATES[new URL(req.url).pathname];
      return body ? new Response(body) : new Response("missing", { status: 404 });
    },
  );
  const base = `http://127.0.0.1:${files.addr.port}`;
  const srv = await startTestServer({
    ...smtp.env,
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_DE: "Bitte bestätige deine Anmeldung, {{ .Data.name }}",
    AUTHSVC_MAILER_TEMPLATES_CONFIRMATION_DE: `${base}/de/confirm.html`,
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_FR: "Confirmez votre inscription",
    AUTHSVC_MAILER_TEMPLATES_CONFIRMATION_FR: `${base}/fr/confirm.html`,
    // GoTrue's own name, with a locale suffix; only a subject: the body stays the default.
    GOTRUE_MAILER_SUBJECTS_RECOVERY_DE: "Passwort zurücksetzen",
  });
  const signUp = async (email: string, data: Record<string, unknown>, lang?: string) => {
    const r = await call(srv, "POST", "/signup", {
      body: { email, password: "locale-pw-80", data },
      headers: lang ? { "accept-language": lang } : {},
    });
    assert.equal(r.status, 200, r.text);
    return await smtp.waitForMail(email);
  };
  try {
    // The user's own locale, with a region the settings do not have: German.
    const ada = uniqueEmail("ada");
    const de = await signUp(ada, { locale: "de-AT", name: "Ada" }, "fr-FR, fr;q=0.9");
    assert.equal(de.subject, "Bitte bestätige deine Anmeldung, Ada");
    assert.match(de.html, /<h2>Willkommen, Ada!<\/h2>/);
    assert.match(de.text, /Oder gib den Code ein: \d{6}/);
    // The variables rendered as in any template: the link signs the user in.
    const link = new URL(de.link);
    const confirmed = await call(srv, "GET", `${link.pathname}${link.search}`);
    assert.match(confirmed.headers.get("location") ?? "", /access_token=/, confirmed.text);

    // No locale of the user's: the browser's first language that has texts (here the second).
    const bea = uniqueEmail("bea");
    const fr = await signUp(bea, {}, "es-ES, fr-CA;q=0.8, de;q=0.5");
    assert.equal(fr.subject, "Confirmez votre inscription");
    assert.match(fr.html, /<h2>Bienvenue !<\/h2>/);
    const code = await call(srv, "POST", "/verify", {
      body: { type: "signup", email: bea, token: fr.code },
    });
    assert.equal(code.status, 200, "the code of the French mail confirms the user");

    // Neither: the default texts.
    const cem = uniqueEmail("cem");
    const en = await signUp(cem, { locale: "tr" }, "es");
    assert.equal(en.subject, "Confirm Your Signup");
    assert.match(en.text, /Confirm your signup/);

    // A kind the locale has only a subject for: German subject, default body, link intact.
    const reset = await call(srv, "POST", "/recover", { body: { email: ada } });
    assert.equal(reset.status, 200, reset.text);
    const rec = await smtp.waitForMail(ada);
    assert.equal(rec.subject, "Passwort zurücksetzen");
    assert.match(rec.text, /Reset Password/);
    assert.match(rec.link, /type=recovery/);
    // A kind with no texts in any other language: the default, whatever the user's locale.
    const magic = await call(srv, "POST", "/magiclink", { body: { email: ada } });
    assert.equal(magic.status, 200, magic.text);
    assert.equal((await smtp.waitForMail(ada)).subject, "Your Magic Link");
  } finally {
    await srv.close();
    await smtp.close();
    ac.abort();
    await files.finished;
  }
});

Deno.test("locale settings: read, checked and not taken for unknown names", () => {
  const env = {
    ...BASE_ENV,
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_PT_BR: "Confirme seu cadastro",
    AUTHSVC_MAILER_TEMPLATES_EMAIL_CHANGE_DE: "https://mail.example.com/de/change.html",
  };
  const { config, docs } = readConfig(env);
  assert.deepEqual(config.mailer.localized, {
    "pt-br": { subjects: { confirmation: "Confirme seu cadastro" }, templates: {} },
    de: { subjects: {}, templates: { email_change: "https://mail.example.com/de/change.html" } },
  });
  assert.deepEqual(settingNameWarnings(env, docs), []);
  // A broken subject stops the start naming the variable, as a default-language one does.
  assert.throws(
    () => readConfig({ ...BASE_ENV, AUTHSVC_MAILER_SUBJECTS_INVITE_FR: "Bonjour {{ .Email" }),
    /AUTHSVC_MAILER_SUBJECTS_INVITE_FR: /,
  );
});
