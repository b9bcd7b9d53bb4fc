/**
 * The nginx and Caddy snippets of docs/operations.md ("Behind a reverse
 * proxy"), run as written in front of a server: only the certificate, the
 * proxy's port and the server's port are put in (issue 46, item 8). Through
 * each proxy: /health answers, a client's own Authsvc-Proxy-Forwarded-For is
 * replaced by its real address, and the console's sign-in (Origin and Host
 * checked) works.
 *
 * Needs Debian's nginx and caddy (`apt-get install nginx caddy`; .ci/run
 * installs them when missing) and openssl for the test certificate.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { freePort } from "../../helpers/process.ts";
import { Client } from "../console/_helpers.ts";
import { localhostCertificate } from "../../helpers/tls.ts";

const DOC = new URL("../../../docs/operations.md", import.meta.url);

/** The fenced block of `lang` in the "Behind a reverse proxy" section. */
async function snippet(lang: string): Promise<string> {
  const text = await Deno.readTextFile(DOC);
  const section = text.slice(text.indexOf("## Behind a reverse proxy"));
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(section);
  assert.ok(m, `docs/operations.md has a ${lang} block under "Behind a reverse proxy"`);
  return m[1];
}

function which(name: string): string {
  for (const dir of ["/usr/sbin", "/usr/bin", "/usr/local/bin"]) {
    try {
      if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
    } catch { /* next */ }
  }
  throw new Error(`${name} not found: apt-get install ${name}`);
}

/** Waits until something accepts connections on `port` (the proxy's start, an event). */
async function listening(port: number, proxy: Deno.ChildProcess): Promise<void> {
  let exited = false;
  proxy.status.then(() => exited = true);
  for (;;) {
    assert.ok(!exited, "the proxy exited");
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The audit entries' IP addresses of the sign-up of `email`. */
async function signupIps(srv: TestServer, email: string): Promise<string[]> {
  const res = await srv.fetch(`/admin/audit?query=author:${encodeURIComponent(email)}`, {
    headers: { authorization: `Bearer ${await srv.serviceRoleToken()}` },
  });
  const entries = await res.json() as { ip_address: string }[];
  return entries.map((e) => e.ip_address);
}

async function checkThrough(srv: TestServer, base: string, caCert: string) {
  const client = Deno.createHttpClient({ caCerts: [caCert] });
  try {
    const via = (path: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, client });
    const health = await via("/health");
    assert.equal(health.status, 200);
    await health.body?.cancel();

    // A client's own header is replaced by the address the proxy saw.
    const email = `proxied-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const signup = await via("/signup", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "Authsvc-Proxy-Forwarded-For": "203.0.113.9",
      },
      body: JSON.stringify({ email, password: "proxied-password-1" }),
    });
    assert.equal(signup.status, 200, await signup.clone().text());
    await signup.body?.cancel();
    const ips = await signupIps(srv, email);
    assert.ok(ips.length > 0 && ips.every((ip) => ip === "127.0.0.1"), JSON.stringify(ips));

    // The console's sign-in: the browser's Origin is the proxy's address.
    const op = new Client({ ...srv, fetch: via } as TestServer);
    await (await op.fetch("/console/")).body?.cancel();
    const login = await op.fetch("/console/api/login", {
      method: "POST",
      headers: { "content-type": "application/json", origin: base },
      body: JSON.stringify({ email: "operator@example.com", password: "operator-password-1" }),
    });
    assert.equal(login.status, 200, await login.clone().text());
    await login.body?.cancel();
  } finally {
    client.close();
  }
}

async function withServer(fn: (srv: TestServer, dir: string) => Promise<void>) {
  const srv = await startTestServer({
    AUTHSVC_CONSOLE_ENABLED: "true",
    AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true",
  });
  const dir = await Deno.makeTempDir({ prefix: "authsvc-proxy-" });
  try {
    const made = await srv.fetch("/admin/users", {
      method: "POST",
      headers: {
        authorization: `Bearer ${await srv.serviceRoleToken()}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        email: "operator@example.com",
        password: "operator-password-1",
        email_confirm: true,
        role: "supabase_admin",
      }),
    });
    assert.equal(made.status, 200);
    await made.body?.cancel();
    // Without a proxy the server takes the header as it comes: the proxy must set it.
    const direct = await srv.fetch("/signup", {
      method: "POST",
      headers: { "content-type": "application/json", "Authsvc-Proxy-Forwarded-For": "203.0.113.9" },
      body: JSON.stringify({ email: "direct@example.com", password: "direct-password-1" }),
    });
    await direct.body?.cancel();
    const ips = await signupIps(srv, "direct@example.com");
    assert.ok(ips.length > 0 && ips.every((ip) => ip === "203.0.113.9"), JSON.stringify(ips));
    await fn(srv, dir);
  } finally {
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const upstream = (srv: TestServer) => new URL(srv.url).host;

Deno.test("the nginx snippet of docs/operations.md, in front of the server", async () => {
  const nginx = which("nginx");
  const block = await snippet("nginx");
  await withServer(async (srv, dir) => {
    const { ca, cert, key } = await localhostCertificate(dir);
    const port = freePort();
    const site = block
      .replace("listen 443 ssl;", `listen 127.0.0.1:${port} ssl;`)
      .replace("server_name auth.example.com;", "server_name localhost;")
      .replace("/etc/ssl/auth.example.com.crt", cert)
      .replace("/etc/ssl/auth.example.com.key", key)
      .replace("127.0.0.1:8081", upstream(srv));
    // The site as written, in the smallest nginx.conf that runs it in the foreground.
    const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
      .map((t) => `${t}_temp_path ${dir}/${t};`).join("\n");
    await Deno.writeTextFile(
      `${dir}/nginx.conf`,
      `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\n` +
        `events {}\nhttp {\naccess_log off;\n${temp}\n${site}\n}\n`,
    );
    const proxy = new Deno.Command(nginx, {
      args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-e", `${dir}/error.log`],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    try {
      await listening(port, proxy);
      await checkThrough(srv, `https://localhost:${port}`, await Deno.readTextFile(ca));
    } finally {
      proxy.kill("SIGTERM");
      await proxy.output();
    }
  });
});

Deno.test("the Caddy snippet of docs/operations.md, in front of the server", async () => {
  const caddy = which("caddy");
  const block = await snippet("caddyfile");
  await withServer(async (srv, dir) => {
    const { ca, cert, key } = await localhostCertificate(dir);
    const port = freePort();
    const site = block
      .replace("auth.example.com {", `localhost:${port} {\n    tls ${cert} ${key}`)
      .replace("127.0.0.1:8081", upstream(srv));
    // No admin endpoint and no state outside the test's directory.
    await Deno.writeTextFile(
      `${dir}/Caddyfile`,
      `{\n    admin off\n    auto_https disable_redirects\n    storage file_system ${dir}/caddy\n}\n${site}`,
    );
    const proxy = new Deno.Command(caddy, {
      args: ["run", "--config", `${dir}/Caddyfile`, "--adapter", "caddyfile"],
      env: { HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    try {
      await listening(port, proxy);
      await checkThrough(srv, `https://localhost:${port}`, await Deno.readTextFile(ca));
    } finally {
      proxy.kill("SIGTERM");
      await proxy.output();
    }
  });
});
