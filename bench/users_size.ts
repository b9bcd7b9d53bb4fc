/**
 * The users table's size on disk at scale, with and without the stored copy of each user's JSON
 * that migrations 0015-0019 kept (`profile_doc`, dropped by 0021_drop_profile_doc.sql). Loads
 * the same users and identities as `deno task bench --scale` (bench/scale.ts: one e-mail user
 * with its identity per row, in one transaction) into two namespaces: one migrated up to 0019
 * (the copy built by its triggers), one with every migration; then applies 0021 to the first
 * and rewrites it (VACUUM FULL), as an operator would to get the space back at once.
 *
 *   nice -n 19 deno run --lock=deno.dev.lock -A bench/users_size.ts [--users=1000000]
 *
 * Prints one JSON object (sizes in bytes and MB). Both namespaces are dropped at the end.
 */
import postgres from "postgres";
import { MIGRATIONS, readMigration } from "../migrations/mod.ts";
import {
  dropNamespaceObjects,
  postgresUrl,
  randomNamespace,
} from "../tests/helpers/bench_process.ts";

const USERS = Number(
  Deno.args.find((a) => a.startsWith("--users="))?.split("=")[1] ?? 1_000_000,
);
const DB_URL = Deno.env.get("BENCH_DATABASE_URL") || postgresUrl();
const COPY_DROPPED = "0021_drop_profile_doc.sql";

const sql = postgres(DB_URL, { max: 1, onnotice: () => {} });
const log = (msg: string) => console.error(`[${new Date().toISOString()}] ${msg}`);

async function apply(prefix: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    await sql.unsafe((await readMigration(name)).replaceAll("__NS__", prefix));
  }
}

/** Users and identities as bench/scale.ts loads them. */
async function load(p: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx.unsafe(
      `INSERT INTO ${p}users (email, encrypted_password, email_confirmed_at, raw_app_meta_data,
         created_at, updated_at)
       SELECT 'scale-' || g || '@scale.example.com',
         '$2a$10$abcdefghijklmnopqrstuuN2pQvrX0ZlCDDPNpWmEvzVMW8G8FGy.', now(),
         '{"provider":"email","providers":["email"]}',
         now() - g * interval '1 second', now() - g * interval '1 second'
       FROM generate_series(1, ${USERS}) g`,
    );
    await tx.unsafe(
      `INSERT INTO ${p}identities (user_id, provider, provider_id, identity_data, email,
         created_at, updated_at)
       SELECT id, 'email', id::text,
         jsonb_build_object('sub', id::text, 'email', email, 'email_verified', true), email,
         created_at, created_at
       FROM ${p}users`,
    );
  });
  await sql.unsafe(`VACUUM ANALYZE ${p}users`);
}

async function size(p: string): Promise<number> {
  const [r] = await sql.unsafe(`SELECT pg_total_relation_size('${p}users')::bigint AS n`);
  return Number(r.n);
}

const withCopy = `${randomNamespace("usz")}_`;
const without = `${randomNamespace("usz")}_`;
const mb = (n: number) => Math.round(n / 1048576);
try {
  const [{ pid }] = await sql.unsafe(`SELECT pg_backend_pid() AS pid`);
  await new Deno.Command("renice", { args: ["-n", "19", "-p", String(pid)] }).output()
    .catch(() => {});
  await sql.unsafe(`SET maintenance_work_mem = '256MB'`);
  await apply(withCopy, MIGRATIONS.slice(0, MIGRATIONS.indexOf(COPY_DROPPED)));
  await apply(without, MIGRATIONS);
  log(`loading ${USERS} users with the copy (${withCopy})`);
  await load(withCopy);
  const copyBytes = await size(withCopy);
  log(`with the copy: ${mb(copyBytes)} MB; loading ${USERS} users without it (${without})`);
  await load(without);
  const noCopyBytes = await size(without);
  log(`without the copy: ${mb(noCopyBytes)} MB; applying ${COPY_DROPPED} and VACUUM FULL`);
  await apply(withCopy, [COPY_DROPPED]);
  const droppedBytes = await size(withCopy);
  await sql.unsafe(`VACUUM FULL ${withCopy}users`);
  const rewrittenBytes = await size(withCopy);
  const out = {
    date: new Date().toISOString(),
    users: USERS,
    users_table_bytes: {
      with_copy: copyBytes,
      without_copy: noCopyBytes,
      after_0021_before_rewrite: droppedBytes,
      after_0021_and_vacuum_full: rewrittenBytes,
    },
    users_table_mb: {
      with_copy: mb(copyBytes),
      without_copy: mb(noCopyBytes),
      after_0021_before_rewrite: mb(droppedBytes),
      after_0021_and_vacuum_full: mb(rewrittenBytes),
    },
    with_copy_vs_without: Number((copyBytes / noCopyBytes).toFixed(2)),
  };
  console.log(JSON.stringify(out, null, 2));
} finally {
  for (const p of [withCopy, without]) {
    await dropNamespaceObjects((text, params) => sql.unsafe(text, params as never[]), p);
  }
  await sql.end();
}
