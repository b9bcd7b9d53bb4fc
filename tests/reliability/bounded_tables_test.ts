/**
 * Bounded tables: sessions refreshed around the clock, for simulated days,
 * keep a flat number of refresh-token rows once the cleanup runs
 * (server/auth/cleanup.ts). Time is the server's clock, moved an hour per
 * round; the cleanup pass runs after each round, as its schedule would.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { refreshGrant, signUpSession } from "../server/core/_helpers.ts";

const H = 3600;
const SESSIONS = 6;
const ROUNDS = 72; // three days of hourly refreshes

Deno.test("row counts stay flat while sessions keep refreshing", async () => {
  let t = Date.now();
  const clock = { now: () => new Date(t) };
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "100000/1h",
  }, { clock });
  const count = async (table: string) =>
    (await srv.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${srv.db.t(table)}`))[0].n;
  try {
    const tokens: string[] = [];
    for (let i = 0; i < SESSIONS; i++) tokens.push((await signUpSession(srv)).refresh_token);
    const seen: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      t += H * 1000;
      for (let i = 0; i < SESSIONS; i++) {
        const r = await refreshGrant(srv, tokens[i]);
        assert.equal(r.status, 200, `round ${round}: ${JSON.stringify(r.body)}`);
        tokens[i] = r.body.refresh_token as string;
      }
      await srv.services.cleanup.runOnce();
      seen.push(await count("refresh_tokens"));
    }
    // Each session keeps its live token and the tokens revoked within the grace window (a day,
    // its end included): 25 revoked ones once the first day has passed, however long it goes on.
    const settled = seen.slice(30);
    assert.deepEqual(settled, settled.map(() => SESSIONS * 26), JSON.stringify(seen));
    // Without the cleanup every token ever issued would still be there.
    assert.equal(await count("sessions"), SESSIONS);
    assert.ok(SESSIONS * (ROUNDS + 1) > 2.5 * settled[0]);
  } finally {
    await srv.close();
  }
});
