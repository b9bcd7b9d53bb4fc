/**
 * The soak: a few minutes of mixed load on one server process (PostgreSQL),
 * with its memory (RSS) sampled at the start and the end. Not part of
 * `deno task test` (the file name does not match the test pattern); run by
 * `deno task test:reliability`, or alone:
 *
 *   SOAK_SECONDS=180 deno test --lock=deno.dev.lock -A tests/reliability/soak.ts
 *
 * Mix per worker loop: GET /user 50 %, refresh_token grant 20 % (each worker
 * rotates its own token chain), password grant 10 %, sign-up 10 %, a
 * malformed request 10 %. Asserts: no 5xx, no unexpected status, every
 * sign-up answered 200 is stored, every chain's last token still works, and
 * memory grows by less than 150 MB after warm-up (the first sixth).
 */
import assert from "node:assert/strict";
import { postgresUrl, randomNamespace, startServerProcess } from "../helpers/bench_process.ts";
import { dropNamespace } from "../helpers/server.ts";
import { openDb } from "../../server/db/db.ts";

const SECONDS = Number(Deno.env.get("SOAK_SECONDS") ?? 180);
const WORKERS = 8;

async function rssKiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text);
  } catch { /* counted by status */ }
  return { status: res.status, body: parsed };
}

Deno.test(`soak: ${SECONDS} s of mixed load, memory sampled, nothing lost`, async () => {
  const ns = randomNamespace("soak");
  const srv = await startServerProcess({
    DATABASE_URL: postgresUrl(),
    AUTHSVC_DB_NAMESPACE: ns,
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "100000000/1h",
    AUTHSVC_RATE_LIMIT_SIGNUP: "100000000/1h",
    LOG_LEVEL: "error",
  });
  const db = await openDb({ url: postgresUrl(), dataDir: "", maxPoolSize: 2, prefix: `${ns}_` });
  try {
    const password = "Soak-pw-1234";
    const chains: { email: string; access: string; refresh: string }[] = [];
    for (let w = 0; w < WORKERS; w++) {
      const email = `soak-${w}@example.com`;
      const r = await call(srv.url, "POST", "/signup", JSON.stringify({ email, password }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      chains.push({
        email,
        access: r.body.access_token as string,
        refresh: r.body.refresh_token as string,
      });
    }
    const counts: Record<string, Record<string, number>> = {};
    const count = (kind: string, status: number) => {
      counts[kind] ??= {};
      counts[kind][status] = (counts[kind][status] ?? 0) + 1;
    };
    const signedUp: string[] = [];
    const expected: Record<string, number[]> = {
      get_user: [200],
      refresh: [200],
      password: [200],
      signup: [200],
      malformed: [400],
    };
    const samples: { t: number; rssMiB: number }[] = [];
    const started = Date.now();
    const sample = async () =>
      samples.push({
        t: Math.round((Date.now() - started) / 1000),
        rssMiB: Math.round(await rssKiB(srv.pid) / 1024),
      });
    await sample();
    let stop = false;
    const worker = async (w: number) => {
      const chain = chains[w];
      while (!stop) {
        const pick = Math.floor(Math.random() * 10);
        if (pick < 5) {
          const r = await call(srv.url, "GET", "/user", undefined, {
            authorization: `Bearer ${chain.access}`,
          });
          count("get_user", r.status);
        } else if (pick < 7) {
          const r = await call(
            srv.url,
            "POST",
            "/token?grant_type=refresh_token",
            JSON.stringify({ refresh_token: chain.refresh }),
          );
          count("refresh", r.status);
          if (r.status === 200) {
            chain.refresh = r.body.refresh_token as string;
            chain.access = r.body.access_token as string;
          }
        } else if (pick < 8) {
          const r = await call(
            srv.url,
            "POST",
            "/token?grant_type=password",
            JSON.stringify({ email: chain.email, password }),
          );
          count("password", r.status);
        } else if (pick < 9) {
          const email = `soak-${w}-${crypto.randomUUID().slice(0, 12)}@example.com`;
          const r = await call(srv.url, "POST", "/signup", JSON.stringify({ email, password }));
          count("signup", r.status);
          if (r.status === 200) signedUp.push(email);
        } else {
          const r = await call(srv.url, "POST", "/token?grant_type=password", '{"email": [1');
          count("malformed", r.status);
        }
      }
    };
    const sampler = setInterval(() => void sample(), 10_000);
    const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    stop = true;
    await Promise.all(workers);
    clearInterval(sampler);
    await sample();

    const tried = Object.values(counts).reduce(
      (s, m) => s + Object.values(m).reduce((a, b) => a + b, 0),
      0,
    );
    const unexpected = Object.entries(counts).flatMap(([kind, m]) =>
      Object.entries(m).filter(([st]) => !expected[kind].includes(Number(st))).map(([st, c]) =>
        `${kind} ${st} ×${c}`
      )
    );
    const stored = new Set(
      (await db.query<{ email: string }>(`SELECT email FROM ${db.t("users")}`)).map((r) => r.email),
    );
    const lost = signedUp.filter((e) => !stored.has(e));
    const stillValid = await Promise.all(chains.map((c) =>
      call(
        srv.url,
        "POST",
        "/token?grant_type=refresh_token",
        JSON.stringify({ refresh_token: c.refresh }),
      )
    ));
    // The first samples include warm-up (JIT, connection pool, worker pool): growth is
    // judged from the sample after a sixth of the run.
    const warm = samples.find((x) => x.t >= SECONDS / 6) ?? samples[0];
    const first = warm.rssMiB;
    const last = samples[samples.length - 1].rssMiB;
    console.log(
      `soak: ${SECONDS} s, ${WORKERS} workers, ${tried} requests (${
        Math.round(tried / SECONDS)
      }/s), by kind and status ${JSON.stringify(counts)}, unexpected ${
        JSON.stringify(unexpected)
      }, sign-ups ${signedUp.length} (lost ${lost.length}), RSS ${
        samples[0].rssMiB
      } MiB at start, ${first} MiB after warm-up, ${last} MiB at the end, samples ${
        JSON.stringify(samples)
      }`,
    );
    assert.deepEqual(unexpected, []);
    assert.deepEqual(lost, []);
    assert.deepEqual(stillValid.map((r) => r.status), chains.map(() => 200));
    assert.ok(last - first < 150, `RSS grew from ${first} MiB to ${last} MiB`);
  } finally {
    const st = await srv.stop();
    await dropNamespace(db, `${ns}_`).catch(() => {});
    await db.close();
    assert.equal(st.code, 0, srv.output());
  }
});
