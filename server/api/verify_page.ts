/**
 * The confirmation page of a mail's link (MAILER_LINK_CONFIRMATION_PAGE,
 * off by default as GoTrue has no such page; supabase/auth#1214).
 *
 * Mail scanners (Microsoft Safe Links, Mimecast, link previews) open every
 * link of a mail before the person does, often more than once and without
 * any prefetch header, and a link that signs in on GET is used up by them.
 * With the setting on, GET /verify only shows this page; its button submits
 * a form (POST to the same URL, query included), which a scanner does not do,
 * and that POST consumes the token exactly as GET /verify does without the
 * setting (the same redirect with the session or the PKCE code).
 */
import type { Ctx } from "./context.ts";

/** What the button says, by the link's type. */
const ACTIONS: Record<string, { title: string; button: string }> = {
  signup: { title: "Confirm your e-mail address", button: "Confirm my address" },
  invite: { title: "Accept your invitation", button: "Accept the invitation" },
  magiclink: { title: "Sign in", button: "Sign in" },
  recovery: { title: "Reset your password", button: "Continue" },
  email_change: { title: "Confirm your new e-mail address", button: "Confirm the change" },
};

/**
 * Whether a POST to /verify is the page's button: a form submission whose
 * query carries the link's token (auth-js's POST /verify sends JSON).
 */
export function isPageConfirmation(c: Ctx): boolean {
  const type = c.req.header("content-type") ?? "";
  return type.startsWith("application/x-www-form-urlencoded") && !!c.req.query("token");
}

/** The page: a title and one button that POSTs the link's own URL. */
export function confirmationPage(c: Ctx, linkType: string): Response {
  const a = ACTIONS[linkType] ?? { title: "Confirm", button: "Continue" };
  // No `action`: the form posts to the document's URL, the link with its query, as the person's
  // browser sees it (also behind a proxy that adds a path prefix).
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${a.title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
button{font-size:1.1rem;padding:.6rem 1.4rem;cursor:pointer}</style></head>
<body><h1>${a.title}</h1>
<p>Press the button to continue. The link works once.</p>
<form method="post"><input type="hidden" name="confirm" value="1">
<button type="submit">${a.button}</button></form></body></html>
`;
  return c.body(html, 200, {
    "content-type": "text/html; charset=utf-8",
    // The URL holds a credential: never cached, never sent on as a referrer, never framed.
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "content-security-policy":
      "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  });
}
