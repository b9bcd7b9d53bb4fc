/**
 * What the refresh_token grant could cost: a bare `Deno.serve` handler doing
 * an exchange's database work as ONE statement through the server's own
 * PostgreSQL client (`server/db/pg`), on the server's tables: the
 * statement of RefreshTokenStore.rotateLive (lock the session, revoke the
 * token if still live, store its child, note the session refreshed, write
 * the audit entry, read the user, identities and factors). Around it only
 * the least an answer needs: the token's key (its stamp and hash, as the
 * server's), a stamped child, an HS256 access token signed, JSON answered
 * with the new refresh token. No routing, no
 * middleware, no policy, no fallback: a token the statement does not rotate
 * gets a 400. `deno task bench` runs it beside the real grant
 * (`baseline_refresh_one_statement`).
 *
 *   deno run --lock=deno.dev.lock -A bench/refresh_one_statement.ts <postgres-url> <table-prefix> <jwt-secret>
 *
 * Prints `listening on http://127.0.0.1:<port>` once ready.
 */
import { Buffer } from "node:buffer";
import { createHmac, randomBytes } from "node:crypto";
import { openDb } from "../server/db/db.ts";
import { RefreshTokenStore } from "../server/store/refresh_tokens.ts";
import { refreshTokenKey, stampedRefreshToken } from "../server/auth/refresh_token_format.ts";

const [url, prefix, secret] = Deno.args;
if (!url || !/^[a-z0-9_]*$/.test(prefix ?? "") || !secret) {
  console.error("usage: refresh_one_statement.ts <postgres-url> <table-prefix> <jwt-secret>");
  Deno.exit(2);
}
const db = await openDb({ url, dataDir: "", maxPoolSize: 0, prefix });
const tokens = new RefreshTokenStore(db);
const b64 = (s: string) => Buffer.from(s).toString("base64url");
const HEADER = b64(JSON.stringify({ alg: "HS256", typ: "JWT" }));
const PAYLOAD = { action: "token_refreshed", actor_name: "", log_type: "token", traits: {} };

const ac = new AbortController();
Deno.addSignalListener("SIGTERM", () => {
  ac.abort();
  server.finished.then(() => db.close());
});
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  signal: ac.signal,
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, async (req) => {
  const { refresh_token: token } = await req.json();
  const now = new Date();
  const child = stampedRefreshToken(randomBytes(32).toString("base64url"), now);
  const done = typeof token === "string"
    ? await tokens.rotateLive({
      hash: refreshTokenKey(token),
      childHash: refreshTokenKey(child),
      now,
      timeboxSec: 0,
      inactivityTimeoutSec: 0,
      auditPayload: PAYLOAD,
      ip: "127.0.0.1",
    })
    : null;
  if (!done) return Response.json({ error_code: "refresh_token_not_found" }, { status: 400 });
  const iat = Math.floor(now.getTime() / 1000);
  const claims = b64(JSON.stringify({
    sub: done.user.id,
    aud: "authenticated",
    exp: iat + 3600,
    iat,
    email: done.user.email ?? "",
    role: "authenticated",
    aal: done.session.aal,
    amr: done.session.amr,
    session_id: done.session.id,
  }));
  const sig = createHmac("sha256", secret).update(`${HEADER}.${claims}`).digest("base64url");
  return Response.json({
    access_token: `${HEADER}.${claims}.${sig}`,
    token_type: "bearer",
    expires_in: 3600,
    expires_at: iat + 3600,
    refresh_token: child,
    user: { ...done.user, encrypted_password: undefined, identities: done.identities },
  });
});
