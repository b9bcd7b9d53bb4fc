/**
 * What building GET /user's answer at write time (migrations/0015_profile_doc.sql)
 * costs the writes that trigger it: PostgreSQL backend CPU per statement
 * (utime + stime of the backend from /proc, so other load on the machine
 * does not count) for a sign-in's user update (last_sign_in_at), a sign-up's
 * user and identity inserts (one transaction) and an identity update, with
 * the builder on and with the triggers as 0009_profile_rev.sql had them,
 * alternated in one namespace: off, on, off, on.
 *
 *   deno run --lock=deno.dev.lock -A bench/profile_doc_write.ts [rounds=2] [statements=3000]
 */
import postgres from "postgres";
import { openDb } from "../server/db/db.ts";
import { migrate } from "../server/db/migrate.ts";
import { dropNamespace } from "../tests/helpers/server.ts";

const DB_URL = Deno.env.get("BENCH_DATABASE_URL") ?? Deno.env.get("DATABASE_URL") ??
  "postgres://postgres@127.0.0.1:5432/test";
const ROUNDS = Number(Deno.args[0] ?? 2);
const N = Number(Deno.args[1] ?? 3000);
const ns = `pdw${crypto.randomUUID().slice(0, 8)}_`;
const TICK_US = 1_000_000 / 100; // USER_HZ

const db = await openDb({ url: DB_URL, dataDir: "", maxPoolSize: 1, prefix: ns });
await migrate(db);
const sql = postgres(DB_URL, { max: 1, onnotice: () => {} });
const t = (name: string) => `${ns}${name}`;

/** The 0009 bodies: a revision, no answer built. */
const OFF = `
CREATE OR REPLACE FUNCTION ${
  t("users_profile_rev_on_update")
}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.profile_rev = OLD.profile_rev THEN
    NEW.profile_rev := nextval('${t("users_profile_rev_seq")}');
  END IF;
  RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION ${
  t("users_profile_rev_of_child")
}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    UPDATE ${t("users")} SET profile_rev = nextval('${t("users_profile_rev_seq")}')
      WHERE id = NEW.user_id AND xmin <> pg_current_xact_id()::xid;
  END IF;
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.user_id IS DISTINCT FROM NEW.user_id) THEN
    UPDATE ${t("users")} SET profile_rev = nextval('${t("users_profile_rev_seq")}')
      WHERE id = OLD.user_id AND xmin <> pg_current_xact_id()::xid;
  END IF;
  RETURN NULL;
END $$;
ALTER TABLE ${t("users")} DISABLE TRIGGER ${t("users_profile_doc")};`;

// The 0015 bodies, as migrated.
const [{ on_update, of_child }] = await sql.unsafe(
  `SELECT pg_get_functiondef('${t("users_profile_rev_on_update")}'::regproc) AS on_update,
          pg_get_functiondef('${t("users_profile_rev_of_child")}'::regproc) AS of_child`,
);
const ON = `${on_update};\n${of_child};\nALTER TABLE ${t("users")} ENABLE TRIGGER ${
  t("users_profile_doc")
};`;

const [{ pid }] = await sql`SELECT pg_backend_pid() AS pid`;
async function backendUs(): Promise<number> {
  const f = (await Deno.readTextFile(`/proc/${pid}/stat`)).split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US; // utime, stime
}

let seq = 0;
/** A signed-up user as the server makes one: e-mail identity, app metadata. */
async function signUp(): Promise<string> {
  return await sql.begin(async (tx) => {
    const email = `w${seq++}-${ns}@example.com`;
    const [u] = await tx.unsafe(
      `INSERT INTO ${t("users")} (email, encrypted_password, email_confirmed_at, raw_app_meta_data,
         raw_user_meta_data)
       VALUES ($1, '$2a$10$abcdefghijklmnopqrstuuJ1vK0vP2fQ9mJ8yX6cR3sT4uW5xY6zA', now(),
         '{"provider":"email","providers":["email"]}', '{"name":"Ada Lovelace"}') RETURNING id`,
      [email],
    );
    await tx.unsafe(
      `INSERT INTO ${t("identities")} (user_id, provider, provider_id, identity_data, email)
       VALUES ($1::uuid, 'email', $3, jsonb_build_object('sub', $3::text, 'email', $2::text,
         'email_verified', true, 'phone_verified', false), $2)`,
      [u.id, email, String(u.id)],
    );
    return u.id as string;
  });
}

async function measure(fn: (i: number) => Promise<unknown>): Promise<number> {
  const before = await backendUs();
  for (let i = 0; i < N; i++) await fn(i);
  return ((await backendUs()) - before) / N;
}

const rows: Record<string, Record<string, number[]>> = {};
const note = (variant: string, what: string, us: number) => {
  ((rows[what] ??= {})[variant] ??= []).push(Math.round(us * 10) / 10);
};
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const [variant, ddl] of [["0009 (no answer built)", OFF], ["0015 (answer built)", ON]]) {
      await sql.unsafe(ddl);
      const ids: string[] = [];
      note(
        variant,
        "sign-up: user + identity insert (one transaction)",
        await measure(async () => {
          ids.push(await signUp());
        }),
      );
      note(
        variant,
        "sign-in: UPDATE users SET last_sign_in_at",
        await measure((i) =>
          sql.unsafe(`UPDATE ${t("users")} SET last_sign_in_at = now() WHERE id = $1`, [ids[i]])
        ),
      );
      const idents = await sql.unsafe(
        `SELECT id FROM ${t("identities")} WHERE user_id = ANY($1::uuid[])`,
        [ids],
      );
      note(
        variant,
        "UPDATE identities SET last_sign_in_at",
        await measure((i) =>
          sql.unsafe(`UPDATE ${t("identities")} SET last_sign_in_at = now() WHERE id = $1`, [
            idents[i].id,
          ])
        ),
      );
      console.error(`round ${r + 1} ${variant} done`);
    }
  }
  console.log(`PostgreSQL backend CPU per statement (µs), ${N} statements each, rounds in order:`);
  for (const [what, byVariant] of Object.entries(rows)) {
    for (const [variant, xs] of Object.entries(byVariant)) {
      console.log(`${what.padEnd(52)} ${variant.padEnd(24)} ${xs.join(", ")}`);
    }
  }
} finally {
  await sql.end();
  await dropNamespace(db, ns);
  await db.close();
}
