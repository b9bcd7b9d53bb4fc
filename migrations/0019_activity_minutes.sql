-- The console's activity chart (server/console/figures.ts): sign-ins, sign-ups,
-- token refreshes and failed sign-in attempts per minute, summed over every
-- server process. Each process adds its counts every few seconds; the cleanup
-- deletes minutes older than a day (server/store/cleanup.ts).
CREATE TABLE __NS__activity_minutes (
  minute timestamptz NOT NULL,
  series text NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (minute, series)
);
