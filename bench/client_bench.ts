/**
 * What the library adds to a token request: a full client-credentials grant
 * through `Client` (request building, Basic auth, fetch, parsing, AccessToken)
 * beside the same request made with bare `fetch` + `response.json()`, both
 * against one loopback token endpoint. A third line is bare fetch made safe
 * the usual way: `AbortSignal.timeout(30_000)` and manual redirect handling
 * (the library's own timeout is an abort signal per request, aborted by one
 * timer per client). The third line's timers, pending for 30 s, slow its
 * neighbours too: with the library and bare fetch alone the ratio reads about
 * 0.01 higher. A fourth line is bare fetch with what the library's timeout
 * puts on every request: the signal of a fresh `AbortController` (no timer),
 * which fetch follows with a dependent signal; the library / (bare fetch +
 * signal) ratio is what the library adds beyond that signal.
 *
 *   deno bench --lock=deno.dev.lock -A bench/client_bench.ts
 *
 * `deno bench` prints the ratio in its summary (baseline: bare fetch). Because
 * sequential groups drift on a loaded machine, the file first measures the
 * four interleaved (one of each per round, in a rotating order) in
 * CLIENT_BENCH_RUNS runs (default 5) of CLIENT_BENCH_ROUNDS rounds (default
 * 3000) and prints each run's medians and the median of the runs' ratios.
 * With CLIENT_BENCH_INTERLEAVED_ONLY=1 it stops there, so that
 *
 *   CLIENT_BENCH_INTERLEAVED_ONLY=1 deno run --lock=deno.dev.lock -A bench/client_bench.ts
 *
 * prints the ratios and exits.
 */
import { Client } from "../mod.ts";

const body = JSON.stringify({
  access_token: "bench-access-token-0123456789abcdef",
  token_type: "Bearer",
  expires_in: 3600,
  scope: "api:read",
});
const server = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  async (req) => {
    await req.text();
    return new Response(body, { headers: { "content-type": "application/json" } });
  },
);
const site = `http://127.0.0.1:${server.addr.port}`;
const client = new Client("bench-client", "bench-secret", { site });
const authorization = `Basic ${btoa("bench-client:bench-secret")}`;
const headers = {
  authorization,
  accept: "application/json",
  "content-type": "application/x-www-form-urlencoded",
};

async function bareFetch(): Promise<void> {
  const res = await fetch(`${site}/oauth/token`, {
    method: "POST",
    headers,
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "api:read" }),
  });
  const json = await res.json();
  if (!json.access_token) throw new Error("no token");
}

async function bareFetchSameSafety(): Promise<void> {
  const res = await fetch(`${site}/oauth/token`, {
    method: "POST",
    headers,
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "api:read" }),
    redirect: "manual",
    signal: AbortSignal.timeout(30_000),
  });
  const json = await res.json();
  if (!json.access_token) throw new Error("no token");
}

async function bareFetchWithSignal(): Promise<void> {
  const res = await fetch(`${site}/oauth/token`, {
    method: "POST",
    headers,
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "api:read" }),
    redirect: "manual",
    signal: new AbortController().signal,
  });
  const json = await res.json();
  if (!json.access_token) throw new Error("no token");
}

async function library(): Promise<void> {
  const token = await client.clientCredentials.getToken({ scope: "api:read" });
  if (!token.token) throw new Error("no token");
}

/** One run: the four interleaved, one of each per round in a rotating order; medians in µs. */
async function interleaved(
  rounds: number,
): Promise<{ bare: number; safe: number; signal: number; lib: number }> {
  const fns = [bareFetch, bareFetchSameSafety, bareFetchWithSignal, library];
  const times: number[][] = fns.map(() => []);
  for (let i = 0; i < rounds + 300; i++) {
    // Rotating the order: whichever runs right after another request pays part of its
    // leftovers (connection reuse, GC), so no request should always come first or last.
    for (let j = 0; j < fns.length; j++) {
      const k = (i + j) % fns.length;
      const t = performance.now();
      await fns[k]();
      if (i >= 300) times[k].push(performance.now() - t);
    }
  }
  const [bare, safe, signal, lib] = times.map(median);
  return { bare, safe, signal, lib };
}

const median = (x: number[]) => x.sort((a, b) => a - b)[x.length >> 1] * 1000;

const rounds = Number(Deno.env.get("CLIENT_BENCH_ROUNDS") ?? 3000);
const runs = Number(Deno.env.get("CLIENT_BENCH_RUNS") ?? 5);
const ratios: number[] = [];
const signalRatios: number[] = [];
for (let run = 1; run <= runs; run++) {
  const { bare, safe, signal, lib } = await interleaved(rounds);
  ratios.push(lib / bare);
  signalRatios.push(lib / signal);
  console.log(
    `run ${run}: interleaved medians over ${rounds} rounds: bare fetch ${bare.toFixed(1)} µs, ` +
      `bare fetch + timeout + manual redirects ${safe.toFixed(1)} µs, bare fetch + signal ${
        signal.toFixed(1)
      } µs, library ${lib.toFixed(1)} µs; library / bare fetch = ${(lib / bare).toFixed(3)} (+${
        (lib - bare).toFixed(1)
      } µs); library / same-safety fetch = ${(lib / safe).toFixed(3)} (+${
        (lib - safe).toFixed(1)
      } µs); library / fetch + signal = ${(lib / signal).toFixed(3)} (+${
        (lib - signal).toFixed(1)
      } µs)`,
  );
}
const middle = (x: number[]) => [...x].sort((a, b) => a - b)[x.length >> 1].toFixed(3);
console.log(
  `library / bare fetch, median of ${runs} runs = ${middle(ratios)} ` +
    `(runs: ${ratios.map((r) => r.toFixed(3)).join(", ")}); target <= 1.050; ` +
    `library / bare fetch + signal, median = ${middle(signalRatios)}`,
);

if (Deno.env.get("CLIENT_BENCH_INTERLEAVED_ONLY")) {
  // `deno run`: stop here (the server would keep the process alive).
  await server.shutdown();
} else {
  Deno.bench({ name: "bare fetch", group: "token request", baseline: true, fn: bareFetch });
  Deno.bench({
    name: "bare fetch + timeout + manual redirects",
    group: "token request",
    fn: bareFetchSameSafety,
  });
  Deno.bench({
    name: "bare fetch + signal",
    group: "token request",
    fn: bareFetchWithSignal,
  });
  Deno.bench({ name: "Client.clientCredentials.getToken", group: "token request", fn: library });
}
