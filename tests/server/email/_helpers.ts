/** A test server wired to an in-process SMTP server, and small helpers for e-mail flows. */
import { startTestServer, type TestServer, type TestServerOptions } from "../../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../../helpers/smtp.ts";
import { call } from "../../helpers/http.ts";

export interface EmailEnv {
  srv: TestServer;
  smtp: TestSmtp;
}

/** Runs `fn` with a server that sends mail to a fresh SMTP server; closes both. */
export async function withEmail(
  env: Record<string, string>,
  fn: (e: EmailEnv) => Promise<void>,
  opts: TestServerOptions = {},
): Promise<void> {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env, ...env }, opts);
  try {
    await fn({ srv, smtp });
  } finally {
    await srv.close();
    await smtp.close();
  }
}

/** A mail's link (on the default API_EXTERNAL_URL) pointed at the test server. */
export function local(srv: TestServer, link: string): string {
  return link.replace("http://localhost:8081", srv.url);
}

/** Creates a user through the admin API (confirmed unless `confirm` is false); returns its id. */
export async function confirmedUser(
  srv: TestServer,
  email: string,
  password = "pw-123456",
  confirm = true,
): Promise<{ id: string }> {
  const r = await call(srv, "POST", "/admin/users", {
    body: {
      email,
      password,
      email_confirm: confirm,
    },
    token: await srv.serviceRoleToken(),
  });
  if (r.status !== 200) throw new Error(`creating ${email}: ${JSON.stringify(r.body)}`);
  return r.body as { id: string };
}

/** Follows a mail's link as a browser would, without following the final redirect. */
export async function openLink(
  link: string,
  init: RequestInit = {},
): Promise<{ status: number; location: URL | null }> {
  const res = await fetch(link, { redirect: "manual", ...init });
  await res.body?.cancel();
  const loc = res.headers.get("location");
  return { status: res.status, location: loc ? new URL(loc) : null };
}

/** The parameters of a redirect's fragment. */
export function fragment(u: URL): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(u.hash.slice(1)));
}

/** GET /user with a bearer token. */
export async function getUser(srv: TestServer, token: string): Promise<Record<string, unknown>> {
  const res = await srv.fetch("/user", { headers: { authorization: `Bearer ${token}` } });
  return await res.json();
}
