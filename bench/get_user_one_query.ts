/**
 * What GET /user could cost: the same work as the server's handler (verify
 * the HS256 access token, load the user, check the session, list identities
 * and factors, answer JSON) with the four lookups folded into ONE query, on
 * the server's own tables. Run by `deno task bench` beside the real endpoint,
 * so the report can show how much of the gap to the one-query baseline is
 * round trips.
 *
 *   deno run --lock=deno.dev.lock -A bench/get_user_one_query.ts <postgres-url> <table-prefix> <jwt-secret> [pool-max]
 *
 * postgres.js runs with `pool-max` connections (default 1: its fastest pool size here;
 * `deno task bench` passes the fastest of its baseline sweep).
 *
 * Prints `listening on http://127.0.0.1:<port>` once ready.
 */
import postgres from "postgres";
import * as jose from "jose";

const [url, prefix, secret, poolMax = "1"] = Deno.args;
if (!url || !/^[a-z0-9_]+$/.test(prefix ?? "") || !secret || !(Number(poolMax) >= 1)) {
  console.error(
    "usage: get_user_one_query.ts <postgres-url> <table-prefix> <jwt-secret> [pool-max]",
  );
  Deno.exit(2);
}
const key = await crypto.subtle.importKey(
  "raw",
  new TextEncoder().encode(secret),
  { name: "HMAC", hash: "SHA-256" },
  false,
  ["verify"],
);
const sql = postgres(url, { max: Number(poolMax), prepare: true, onnotice: () => {} });
const text = `SELECT row_to_json(u) AS "user",
    (SELECT s.id FROM ${prefix}sessions s WHERE s.id = $2) AS session_id,
    array_to_json(ARRAY(SELECT i FROM ${prefix}identities i
      WHERE i.user_id = u.id)) AS identities,
    array_to_json(ARRAY(SELECT f FROM ${prefix}mfa_factors f
      WHERE f.user_id = u.id)) AS factors
  FROM ${prefix}users u WHERE u.id = $1 AND u.deleted_at IS NULL`;

const ac = new AbortController();
// Stop accepting, let requests in flight finish, then close the pool (no query cut off).
Deno.addSignalListener("SIGTERM", () => {
  ac.abort();
  server.finished.then(() => sql.end({ timeout: 5 }));
});
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  signal: ac.signal,
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, async (req) => {
  const auth = req.headers.get("authorization") ?? "";
  let claims: jose.JWTPayload;
  try {
    claims = (await jose.jwtVerify(auth.slice(7), key, { algorithms: ["HS256"] })).payload;
  } catch {
    return Response.json({ code: 401, msg: "bad token" }, { status: 401 });
  }
  const ids = [String(claims.sub), String(claims.session_id)];
  const [row] = await sql.unsafe(text, ids, { prepare: true });
  if (!row?.session_id) return Response.json({ code: 403, msg: "no session" }, { status: 403 });
  const user = row.user as Record<string, unknown>;
  return Response.json({
    ...user,
    identities: row.identities,
    factors: (row.factors as unknown[]).length ? row.factors : undefined,
  });
});
