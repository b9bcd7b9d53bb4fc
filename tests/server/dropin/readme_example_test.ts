/**
 * The README's `@supabase/auth-js` example, run as written against a server
 * on the default settings (a directory holding only the committed
 * .env.example, as a fresh clone's `deno task start` runs; issue 46, item
 * 8). Between its two blocks the test does what the README tells the reader
 * to do: open the confirmation link the server wrote to its log.
 */
import assert from "node:assert/strict";
import { AuthClient } from "../../helpers/deps.ts";
import { freePort } from "../../helpers/process.ts";

const ROOT = new URL("../../../", import.meta.url);

/** The README's TypeScript blocks that use AuthClient, in order, without their import line. */
async function exampleBlocks(): Promise<string[]> {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const server = readme.slice(readme.indexOf("## The server"), readme.indexOf("## Documentation"));
  const blocks = [...server.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 2, "a sign-up block and a sign-in block");
  assert.match(blocks[0], /import \{ AuthClient \} from "@supabase\/auth-js";/);
  return blocks.map((b) => b.replace(/^import .*\n/m, ""));
}

/** A running function of the README's code (TypeScript that is also JavaScript). */
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (
  ...args: string[]
) => (...args: unknown[]) => Promise<unknown>;

Deno.test("the README's auth-js example works on the default settings", async () => {
  const [signUpBlock, signInBlock] = await exampleBlocks();
  const dir = await Deno.makeTempDir({ prefix: "authsvc-readme-" });
  await Deno.copyFile(new URL(".env.example", ROOT), `${dir}/.env.example`);
  const port = freePort();
  const env: Record<string, string> = { PORT: String(port), AUTHSVC_API_HOST: "127.0.0.1" };
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-P=server",
      "--config",
      new URL("deno.json", ROOT).pathname,
      new URL("server/main.ts", ROOT).pathname,
    ],
    cwd: dir,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  /** Reads the log until `re` matches a line; that line's JSON. */
  const logLine = async (re: RegExp) => {
    for (;;) {
      const line = log.split("\n").find((l) => re.test(l));
      if (line) return JSON.parse(line);
      const { value, done } = await reader.read();
      if (done) assert.fail(`the server exited:\n${log}\n${await stderr}`);
      log += value;
    }
  };
  try {
    await logLine(/listening on/);
    const base = `http://127.0.0.1:${port}`;
    // The README's address is the default one; this server listens on a free port.
    const run = new AsyncFunction(
      "AuthClient",
      "confirm",
      [signUpBlock, "await confirm();", signInBlock, "return data;"].join("\n")
        .replaceAll("http://localhost:8081", base),
    );
    const data = await run(AuthClient, async () => {
      const mail = await logLine(/mail not sent \(SMTP_HOST unset\).*ann@example\.com/);
      assert.equal(mail.kind, "confirmation");
      const link = new URL(mail.links[0]); // API_EXTERNAL_URL of .env.example: localhost:8081
      const res = await fetch(`${base}${link.pathname}${link.search}`, { redirect: "manual" });
      await res.body?.cancel();
      assert.equal(res.status, 303, "the link confirms the address");
    }) as { session: { access_token: string; user: { email: string } } | null };
    assert.ok(data.session, "signed in");
    assert.equal(data.session.user.email, "ann@example.com");
    assert.ok(data.session.access_token);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reader.cancel();
    await stderr;
    await Deno.remove(dir, { recursive: true });
  }
});
