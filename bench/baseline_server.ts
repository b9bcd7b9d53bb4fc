/**
 * The baselines that bound the server's endpoints on this machine, each run
 * as its own process like the server itself:
 *
 *   deno run --lock=deno.dev.lock -A bench/baseline_server.ts bare
 *     a bare Deno.serve handler answering a small JSON object;
 *   deno run --lock=deno.dev.lock -A bench/baseline_server.ts query <postgres-url> <table> [pool-max]
 *     a handler doing one indexed query (primary-key lookup of a uuid, the
 *     lookup GET /user starts with) through postgres.js with `max` pool-max
 *     connections (default 50), answering the row as JSON; bench/run.ts runs
 *     it at several sizes and takes the fastest as the baseline;
 *   deno run --lock=deno.dev.lock -A bench/baseline_server.ts query4 <postgres-url> <table> [pool-max]
 *     the same lookup four times in a row per request (GET /user's pattern:
 *     user, session, identities, factors), to tell round trips from other costs.
 *
 * Prints `listening on http://127.0.0.1:<port>` once ready.
 */
import postgres from "postgres";

const [mode, url, table, poolMax = "50"] = Deno.args;

function listen(
  handler: (req: Request) => Response | Promise<Response>,
  onStop: () => Promise<unknown> = () => Promise.resolve(),
): void {
  const ac = new AbortController();
  // Stop accepting, let requests in flight finish, then close the pool (no query cut off).
  Deno.addSignalListener("SIGTERM", () => {
    ac.abort();
    server.finished.then(onStop);
  });
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
  }, handler);
}

if (mode === "bare") {
  listen(() => Response.json({ id: "6b1c3a52-0d8e-4a55-9d36-3f0e2b7c9a11", ok: true }));
} else if (mode === "query" || mode === "query4") {
  if (!url || !/^[a-z0-9_]+$/.test(table ?? "")) {
    console.error("usage: baseline_server.ts query|query4 <postgres-url> <table>");
    Deno.exit(2);
  }
  const sql = postgres(url, {
    max: Number(poolMax),
    prepare: true,
    onnotice: () => {},
  });
  const ids = (await sql.unsafe(`SELECT id FROM ${table}`)).map((r) => r.id as string);
  if (!ids.length) throw new Error(`${table} is empty`);
  const text = `SELECT id, email, created_at FROM ${table} WHERE id = $1`;
  let i = 0;
  // Handlers between two queries: wrk closing its connections at the end of a run settles
  // `server.finished` while a query4 handler may still have queries to send, so the pool
  // closes once they are done (a counter, not a promise per request, to cost the baseline nothing).
  let running = 0;
  listen(async () => {
    running++;
    try {
      const id = ids[i++ % ids.length];
      let rows = await sql.unsafe(text, [id], { prepare: true });
      if (mode === "query4") {
        for (let k = 0; k < 3; k++) rows = await sql.unsafe(text, [id], { prepare: true });
      }
      return Response.json(rows[0]);
    } finally {
      running--;
    }
  }, async () => {
    for (let waited = 0; running > 0 && waited < 5000; waited += 10) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await sql.end({ timeout: 5 });
  });
} else {
  console.error("usage: baseline_server.ts bare | query | query4 <postgres-url> <table>");
  Deno.exit(2);
}
