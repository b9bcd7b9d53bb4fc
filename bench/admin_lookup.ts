/**
 * The admin user search at scale (issue 44 item 6; supabase/auth#1390): part of
 * `deno task bench --scale` (bench/scale.ts), on the loaded namespace of a
 * million users. For each kind of filter (a part of an e-mail, a full name, a
 * phone number, an id prefix) it sends GET /admin/users?filter= for random
 * users, one request at a time (latency, not throughput), on GoTrue's pages
 * (with X-Total-Count) and on the console's keyset pages (`after=`), and
 * reports p50 and p99; then the plan of each statement the store runs for
 * it, with EXPLAIN ANALYZE, so the report shows which index answered.
 */
import { jose } from "../deps.ts";
import type { Db, Queryable, Row } from "../server/db/db.ts";
import { UserStore } from "../server/store/users.ts";
import { UserPageStore } from "../server/store/user_pages.ts";

/** Runs SQL on the bench's connection: `sql.unsafe` of postgres.js. */
export type Unsafe = (text: string, params?: unknown[]) => Promise<Row[]>;

/** What the search measured. */
export interface LookupReport {
  requests: number;
  /** Milliseconds, by kind of filter and page style, and over all requests. */
  latency: Record<string, { p50: number; p99: number; max: number; n: number }>;
  /** EXPLAIN ANALYZE of each statement, by kind of filter. */
  plans: Record<string, string>;
  /** True when no plan reads the users table sequentially. */
  noSeqScan: boolean;
}

/** The filters for loaded user number `g` (bench/scale.ts loads e-mail, phone and name so). */
export function filtersFor(g: number, id: string): Record<string, string> {
  return {
    email_part: `scale-${g}@`,
    full_name: `Person ${g} Scale`,
    phone: `+1 555 ${String(g).padStart(7, "0")}`,
    id_prefix: id.slice(0, 8),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summary(ms: number[]) {
  const v = [...ms].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    p50: round(percentile(v, 50)),
    p99: round(percentile(v, 99)),
    max: round(v.at(-1)!),
    n: v.length,
  };
}

/** A service_role token for the bench servers (their JWT secret). */
async function serviceRoleToken(secret: string): Promise<string> {
  return await new jose.SignJWT({ role: "service_role" })
    .setProtectedHeader({ alg: "HS256" })
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(secret));
}

/**
 * Measures the search on `baseUrl` (a server of namespace `prefix`) over `users` loaded users,
 * `perKind` requests of each kind and page style.
 */
export async function measureAdminLookups(opts: {
  sql: Unsafe;
  prefix: string;
  baseUrl: string;
  jwtSecret: string;
  users: number;
  perKind: number;
}): Promise<LookupReport> {
  const { sql, prefix } = opts;
  const token = await serviceRoleToken(opts.jwtSecret);
  const pick = async () => {
    const g = 1 + Math.floor(Math.random() * opts.users);
    const [row] = await sql(
      `SELECT id::text AS id FROM ${prefix}users WHERE email = $1`,
      [`scale-${g}@scale.example.com`],
    );
    return filtersFor(g, String(row.id));
  };
  const latency: Record<string, number[]> = { all: [] };
  for (let i = 0; i < opts.perKind; i++) {
    const filters = await pick();
    for (const [kind, filter] of Object.entries(filters)) {
      for (const style of ["paged", "keyset"]) {
        const q = new URLSearchParams({ filter, per_page: "50" });
        if (style === "keyset") q.set("after", "");
        const t0 = performance.now();
        const res = await fetch(`${opts.baseUrl}/admin/users?${q}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = await res.json() as { users?: unknown[] };
        const ms = performance.now() - t0;
        if (res.status !== 200 || !body.users?.length) {
          throw new Error(`admin lookup ${kind} "${filter}": ${res.status}, no user found`);
        }
        (latency[`${kind}_${style}`] ??= []).push(ms);
        latency.all.push(ms);
      }
    }
  }

  // The statements the store runs, as it runs them (captured, then explained on the bench's
  // connection with their parameters).
  const plans: Record<string, string> = {};
  const filters = await pick();
  const db = { t: (n: string) => `${prefix}${n}`, prefix } as unknown as Db;
  for (const [kind, filter] of Object.entries(filters)) {
    const captured: [string, unknown[]][] = [];
    const capture: Queryable = {
      query<T>(text: string, params: unknown[] = []): Promise<T[]> {
        captured.push([text, params]);
        return Promise.resolve([{ n: 0 }] as T[]);
      },
      exec: () => Promise.resolve(),
    };
    await new UserStore(db).list({ filter, ascending: false, limit: 50, offset: 0 }, capture);
    await new UserPageStore(db).page(filter, null, 51, capture);
    const names = ["paged", "keyset"];
    for (const [i, [text, params]] of captured.entries()) {
      const rows = await sql(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
      plans[`admin_users_${kind}_${names[i]}`] = rows.map((r) => r["QUERY PLAN"]).join("\n");
    }
  }
  const noSeqScan = Object.values(plans).every((p) => !/Seq Scan on \S*users\b/.test(p));
  return {
    requests: latency.all.length,
    latency: Object.fromEntries(Object.entries(latency).map(([k, v]) => [k, summary(v)])),
    plans,
    noSeqScan,
  };
}
