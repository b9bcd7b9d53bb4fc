/**
 * The console's activity figures live in the database (issue 46, item 5):
 * two figure counters on one database stand for two server processes; a
 * third, made afterwards, stands for a restarted one.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { Events } from "../../../server/auth/events.ts";
import { ConsoleFigures, type Minute } from "../../../server/console/figures.ts";
import { Logger } from "../../../server/observe/log.ts";
import { ActivityStore } from "../../../server/store/activity.ts";
import { startTestServer } from "../../helpers/server.ts";

const sum = (hour: Minute[], k: keyof Omit<Minute, "t">) => hour.reduce((n, m) => n + m[k], 0);

Deno.test("console figures: per minute over the last hour, summed over processes, kept over restarts", async () => {
  const srv = await startTestServer();
  // One fixed instant, 30 s into a minute; moved by the test.
  let now = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
  const clock = { now: () => new Date(now) };
  const log = new Logger("error", () => {});
  const store = new ActivityStore(srv.db);
  const eventsA = new Events();
  const eventsB = new Events();
  const a = new ConsoleFigures(eventsA, clock, store, log);
  const b = new ConsoleFigures(eventsB, clock, store, log);
  try {
    eventsA.emit("signin", {});
    eventsA.emit("signin", {});
    eventsB.emit("signin", {});
    eventsA.emit("signup", {});
    a.observe("POST", "/token", 400);
    b.observe("POST", "/factors/abc/verify", 422);
    a.observe("GET", "/user", 401); // not a sign-in
    a.observe("POST", "/token", 500); // a fault, not a failed attempt
    await b.flush(); // what process B counted reaches the table
    now += 60_000;
    eventsB.emit("token_refresh", {});
    await b.close();

    const hour = await a.lastHour();
    assertEquals(hour.length, 60);
    const [prev, last] = hour.slice(-2);
    assertEquals([prev.signins, prev.signups, prev.failures, prev.refreshes], [3, 1, 2, 0]);
    assertEquals([last.signins, last.refreshes], [0, 1]);
    assertEquals(last.t - prev.t, 60_000);

    // A process started afterwards (nothing in its memory) reads the same.
    const restarted = new ConsoleFigures(new Events(), clock, store, log);
    assertEquals(await restarted.lastHour(), hour);

    // An hour later the old minutes are outside the chart.
    now += 60 * 60_000;
    eventsA.emit("signin", {});
    assertEquals(sum(await a.lastHour(), "signins"), 1);
    assertEquals(sum(await restarted.lastHour(), "signins"), 1);
  } finally {
    await a.close();
    await srv.close();
  }
});

Deno.test("console figures: counts pending at shutdown are written before the database closes", async () => {
  const srv = await startTestServer();
  const clock = { now: () => new Date() };
  const log = new Logger("error", () => {});
  const store = new ActivityStore(srv.db);
  const events = new Events();
  const f = new ConsoleFigures(events, clock, store, log);
  try {
    events.emit("signup", {});
    events.emit("signup", {});
    await f.close();
    const rows = await store.since(new Date(Date.now() - 120_000));
    assertEquals(rows.map((r) => [r.series, r.count]), [["signups", 2]]);
  } finally {
    await srv.close();
  }
});
