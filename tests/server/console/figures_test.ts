import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { Events } from "../../../server/auth/events.ts";
import { ConsoleFigures } from "../../../server/console/figures.ts";

Deno.test("console figures: counts per minute over the last hour", () => {
  let now = Date.UTC(2026, 0, 1, 12, 0, 30);
  const events = new Events();
  const f = new ConsoleFigures(events, { now: () => new Date(now) });
  events.emit("signin", {});
  events.emit("signin", {});
  events.emit("signup", {});
  f.observe("POST", "/token", 400);
  f.observe("POST", "/factors/abc/verify", 422);
  f.observe("GET", "/user", 401); // not a sign-in
  f.observe("POST", "/token", 500); // a fault, not a failed attempt
  now += 60_000;
  events.emit("token_refresh", {});
  const hour = f.lastHour();
  assertEquals(hour.length, 60);
  const [prev, last] = hour.slice(-2);
  assertEquals([prev.signins, prev.signups, prev.failures, prev.refreshes], [2, 1, 2, 0]);
  assertEquals([last.signins, last.refreshes], [0, 1]);
  // An hour later the old minutes are gone.
  now += 60 * 60_000;
  events.emit("signin", {});
  assertEquals(f.lastHour().reduce((n, m) => n + m.signins, 0), 1);
});
