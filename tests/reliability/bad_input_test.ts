/**
 * Bad input for every route the server registers (read from the built app,
 * so a new endpoint is covered the day it lands): generated malformed
 * requests must never get a 5xx; a 4xx must be a clear error body
 * ({code, error_code, msg}); the server must stay up; no request that was
 * refused may change a row (rows of every table are counted before and after
 * each request); and no answer carries more than 8 KiB of headers. The admin
 * routes also get every admin query parameter (page, per_page, filter, query
 * and its scopes, sort, order) with hostile values one at a time
 * (malformed.ts, adminQueryRequests): a NUL must be a 400.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import {
  adminQueryRequests,
  BAD_UUIDS,
  type BadRequest,
  bodyRequests,
  bogusJwts,
  queryRequests,
} from "./malformed.ts";

const ENV = {
  AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
  AUTHSVC_SMS_AUTOCONFIRM: "true",
  AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "1000000/1h",
  AUTHSVC_RATE_LIMIT_SIGNUP: "1000000/1h",
  AUTHSVC_RATE_LIMIT_VERIFY: "1000000/1h",
  AUTHSVC_RATE_LIMIT_OTP: "1000000/1h",
  AUTHSVC_RATE_LIMIT_EMAIL_SENT: "1000000/1h",
  AUTHSVC_RATE_LIMIT_SMS_SENT: "1000000/1h",
  AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: "1000000/1h",
};

/** Tables whose rows a refused request must not touch (audit and rate counters may). */
const TABLES = [
  "users",
  "identities",
  "sessions",
  "refresh_tokens",
  "one_time_tokens",
  "flow_state",
  "mfa_factors",
  "mfa_challenges",
  "send_log",
];

/** Response headers larger than this are refused by common clients and proxies (8 KiB). */
const MAX_HEADER_BYTES = 8192;

/** Grant types /token is probed with (the body battery runs for each). */
const TOKEN_GRANTS = ["password", "refresh_token", "pkce", "id_token", "password%00"];

interface Fixture {
  userId: string;
  userToken: string;
  adminToken: string;
  victimId: string;
}

let passwordHash: string | undefined;

async function makeFixture(srv: TestServer): Promise<Fixture> {
  const s = srv.services;
  passwordHash ??= await s.passwords.hash("Correct-Horse-1");
  const suffix = crypto.randomUUID().slice(0, 8);
  const user = await s.users.createWithIdentities({
    email: `bad-input-${suffix}@example.com`,
    aud: "authenticated",
    role: "authenticated",
    encrypted_password: passwordHash,
    email_confirmed_at: new Date(),
  }, ["email"]);
  const victim = await s.users.createWithIdentities({
    email: `victim-${suffix}@example.com`,
    aud: "authenticated",
    role: "authenticated",
    email_confirmed_at: new Date(),
  }, ["email"]);
  const set = await s.sessions.issue(user, { method: "password" });
  return {
    userId: user.id,
    userToken: set.access_token,
    adminToken: await srv.serviceRoleToken(),
    victimId: victim.id,
  };
}

async function counts(srv: TestServer): Promise<Record<string, number>> {
  const cols = TABLES.map((t) => `(SELECT count(*) FROM ${srv.db.t(t)})::int AS ${t}`);
  const [row] = await srv.db.query<Record<string, number>>(`SELECT ${cols.join(", ")}`);
  return row;
}

interface Tally {
  tried: number;
  byStatus: Record<string, number>;
  failures: string[];
}

function fillPath(path: string, fx: Fixture, bad?: { param: string; value: string }): string {
  return path.replace(/:([a-z_]+)/g, (_, name: string) => {
    if (bad && bad.param === name) return encodeURIComponent(bad.value).replaceAll("%25", "%");
    return name === "user_id" ? fx.victimId : crypto.randomUUID();
  });
}

Deno.test("bad input: no route answers malformed requests with a 5xx or changes rows when refusing them", async (t) => {
  const srv = await startTestServer(ENV);
  try {
    let fx = await makeFixture(srv);
    const jwts = await bogusJwts(srv.config.jwt.secret, fx.userId);
    const routes = srv.app.app.routes
      .filter((r) => r.method !== "ALL" && r.path !== "*")
      .map((r) => ({ method: r.method, path: r.path }))
      .filter((r, i, all) =>
        all.findIndex((x) => x.method === r.method && x.path === r.path) === i
      );
    assert.ok(routes.length >= 15, `only ${routes.length} routes found`);
    const tally: Tally = { tried: 0, byStatus: {}, failures: [] };
    let snapshot = await counts(srv);

    const send = async (
      method: string,
      path: string,
      req: BadRequest,
      baseline4xx: boolean,
    ): Promise<number> => {
      const headers: Record<string, string> = {};
      if (req.auth) headers.authorization = req.auth;
      if (req.body) headers["content-type"] = req.body.type;
      const label = `${method} ${path.slice(0, 80)}${req.query.slice(0, 40)} [${req.kind}]`;
      let res: Response;
      try {
        res = await srv.fetch(path + req.query, {
          method,
          headers,
          body: method === "GET" || method === "HEAD" ? undefined : req.body?.bytes,
          redirect: "manual",
        });
      } catch (e) {
        tally.failures.push(`${label}: request failed: ${(e as Error).message}`);
        return 0;
      }
      const text = await res.text();
      let headerBytes = 0;
      for (const [k, v] of res.headers) headerBytes += k.length + v.length + 4;
      if (headerBytes > MAX_HEADER_BYTES) {
        tally.failures.push(`${label}: ${headerBytes} bytes of response headers`);
      }
      tally.tried++;
      tally.byStatus[res.status] = (tally.byStatus[res.status] ?? 0) + 1;
      const after = await counts(srv);
      if (res.status >= 500) {
        tally.failures.push(`${label}: ${res.status} ${text.slice(0, 200)}`);
      } else if (res.status >= 400) {
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(text);
        } catch { /* checked below */ }
        if (
          method !== "HEAD" &&
          (body.code !== res.status || typeof body.msg !== "string" || !body.msg ||
            typeof body.error_code !== "string")
        ) {
          tally.failures.push(
            `${label}: ${res.status} without a clear error body: ${text.slice(0, 200)}`,
          );
        }
        const changed = TABLES.filter((k) => after[k] !== snapshot[k]);
        if (changed.length) {
          tally.failures.push(
            `${label}: refused with ${res.status} but rows changed in ${
              changed.map((k) => `${k} ${snapshot[k]}→${after[k]}`).join(", ")
            }`,
          );
        }
      }
      if (req.mustStatus && res.status !== req.mustStatus) {
        tally.failures.push(`${label}: expected ${req.mustStatus}, got ${res.status}`);
      } else if ((req.must4xx && baseline4xx) && (res.status < 400 || res.status >= 500)) {
        tally.failures.push(`${label}: expected a 4xx, got ${res.status} ${text.slice(0, 120)}`);
      }
      snapshot = after;
      return res.status;
    };

    for (const route of routes) {
      await t.step(`${route.method} ${route.path}`, async () => {
        const before = tally.failures.length;
        const hasBody = !["GET", "HEAD"].includes(route.method);
        const path = fillPath(route.path, fx);
        const queries = route.path === "/token"
          ? TOKEN_GRANTS.map((g) => `?grant_type=${g}`)
          : [""];
        // Which caller gets past the route's auth check, and does `{}` already fail validation?
        let auth: string | undefined;
        let needsAuth = false;
        let baseline4xx = true;
        for (const candidate of [undefined, `Bearer ${fx.userToken}`, `Bearer ${fx.adminToken}`]) {
          const status = await send(route.method, path, {
            kind: "probe",
            query: queries[0],
            body: hasBody
              ? { type: "application/json", bytes: new TextEncoder().encode("{}") }
              : undefined,
            auth: candidate,
            must4xx: false,
          }, false);
          auth = candidate;
          baseline4xx = status >= 400;
          if (status !== 401 && status !== 403) break;
          needsAuth = true;
        }
        if (!baseline4xx) { // a probe may have signed out or deleted
          fx = await makeFixture(srv);
          snapshot = await counts(srv);
        }
        const reqs: BadRequest[] = [];
        for (const q of queries) {
          if (hasBody) {
            for (const r of bodyRequests(srv.config.api.maxBodyBytes)) {
              reqs.push({ ...r, query: q + r.query, auth });
            }
          }
        }
        for (const r of queryRequests()) reqs.push({ ...r, auth });
        if (route.path.startsWith("/admin")) {
          for (const r of adminQueryRequests()) reqs.push({ ...r, auth });
        }
        for (const r of reqs) {
          const status = await send(route.method, fillPath(route.path, fx), r, baseline4xx);
          if (status >= 200 && status < 400) {
            fx = await makeFixture(srv);
            snapshot = await counts(srv);
          }
        }
        if (needsAuth) {
          for (const j of jwts) {
            const status = await send(route.method, path, {
              kind: `bogus JWT: ${j.name}`,
              query: queries[0],
              auth: `Bearer ${j.token}`,
              body: hasBody
                ? { type: "application/json", bytes: new TextEncoder().encode("{}") }
                : undefined,
              must4xx: true,
            }, true);
            if (status !== 401 && status !== 403) {
              tally.failures.push(
                `${route.method} ${route.path} [bogus JWT: ${j.name}]: expected 400/401/403, got ${status}`,
              );
            }
          }
        }
        for (const param of route.path.match(/:([a-z_]+)/g) ?? []) {
          for (const value of BAD_UUIDS) {
            await send(route.method, fillPath(route.path, fx, { param: param.slice(1), value }), {
              kind: `bad ${param.slice(1)} ${JSON.stringify(value.slice(0, 20))}`,
              query: "",
              auth,
              body: hasBody
                ? { type: "application/json", bytes: new TextEncoder().encode("{}") }
                : undefined,
              must4xx: true,
            }, true);
          }
        }
        const health = await srv.fetch("/health");
        await health.body?.cancel();
        assert.equal(health.status, 200, "the server stopped answering /health");
        assert.deepEqual(tally.failures.slice(before), []);
      });
    }
    console.log(
      `bad input: ${routes.length} routes, ${tally.tried} requests, by status ${
        JSON.stringify(tally.byStatus)
      }, ${tally.failures.length} failures`,
    );
  } finally {
    await srv.close();
  }
});
