/**
 * What the library adds to a token request: a full client-credentials grant
 * through `Client` (request building, Basic auth, fetch, parsing, AccessToken)
 * beside the same request made with bare `fetch` + `response.json()`, both
 * against one loopback token endpoint. A third line is bare fetch with what
 * the library always adds on the wire side: a 30 s timeout signal and manual
 * redirect handling.
 *
 *   deno bench -A bench/client_bench.ts
 *
 * `deno bench` prints the ratio in its summary (baseline: bare fetch). Because
 * sequential groups drift on a loaded machine, the file first measures the
 * three interleaved (one of each per round) and prints the ratio of medians.
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

async function library(): Promise<void> {
  const token = await client.clientCredentials.getToken({ scope: "api:read" });
  if (!token.token) throw new Error("no token");
}

async function interleaved(rounds: number): Promise<void> {
  const fns = { bareFetch, bareFetchSameSafety, library };
  const times: Record<string, number[]> = { bareFetch: [], bareFetchSameSafety: [], library: [] };
  for (let i = 0; i < rounds + 300; i++) {
    for (const [name, fn] of Object.entries(fns)) {
      const t = performance.now();
      await fn();
      if (i >= 300) times[name].push(performance.now() - t);
    }
  }
  const median = (x: number[]) => x.sort((a, b) => a - b)[x.length >> 1] * 1000;
  const [bare, safe, lib] = [times.bareFetch, times.bareFetchSameSafety, times.library].map(median);
  console.log(
    `interleaved medians over ${rounds} rounds: bare fetch ${bare.toFixed(1)} µs, ` +
      `bare fetch + timeout + manual redirects ${safe.toFixed(1)} µs, library ${
        lib.toFixed(1)
      } µs\n` +
      `library / bare fetch = ${(lib / bare).toFixed(3)} (+${(lib - bare).toFixed(1)} µs); ` +
      `library / same-safety fetch = ${(lib / safe).toFixed(3)} (+${(lib - safe).toFixed(1)} µs)`,
  );
}

await interleaved(Number(Deno.env.get("CLIENT_BENCH_ROUNDS") ?? 3000));

Deno.bench({ name: "bare fetch", group: "token request", baseline: true, fn: bareFetch });
Deno.bench({
  name: "bare fetch + timeout + manual redirects",
  group: "token request",
  fn: bareFetchSameSafety,
});
Deno.bench({ name: "Client.clientCredentials.getToken", group: "token request", fn: library });
