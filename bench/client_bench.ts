/**
 * What the library adds to a token request: a full client-credentials grant
 * through `Client` (request building, basic auth, fetch, parsing, AccessToken)
 * beside the same request made with bare `fetch` + `response.json()`, both
 * against one loopback token endpoint. `deno bench` prints the ratio in its
 * summary (baseline: bare fetch). Target: the library adds under 10 %.
 *
 *   deno bench -A bench/client_bench.ts
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

Deno.bench({
  name: "bare fetch",
  group: "token request",
  baseline: true,
  async fn() {
    const res = await fetch(`${site}/oauth/token`, {
      method: "POST",
      headers: {
        authorization,
        accept: "application/json",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: "api:read" }),
    });
    const json = await res.json();
    if (!json.access_token) throw new Error("no token");
  },
});

Deno.bench({
  name: "Client.clientCredentials.getToken",
  group: "token request",
  async fn() {
    const token = await client.clientCredentials.getToken({ scope: "api:read" });
    if (!token.token) throw new Error("no token");
  },
});
