/**
 * A throwaway PostgreSQL server of the machine's own PostgreSQL binaries
 * (initdb + pg_ctl, run as the `postgres` user), for what the shared test
 * database cannot show: password authentication (SCRAM-SHA-256, MD5, clear
 * text) and TLS with a certificate made here by openssl.
 *
 *   const cluster = await startCluster();   // null when initdb cannot run here
 *   cluster.url("scram_user", "scram-pw", { sslmode: "verify-full", sslrootcert: cluster.caFile });
 *   await cluster.stop();
 *
 * Users: `scram_user` / `scram-pw` (SCRAM-SHA-256), `md5_user` / `md5-pw`
 * (MD5), `plain_user` / `plain-pw` (clear text), `tls_user` / `tls-pw`
 * (SCRAM, TLS connections only), `postgres` (trust, no password).
 */
import { localhostCertificate } from "./tls.ts";

/** A running throwaway server. */
export interface Cluster {
  port: number;
  /** The CA certificate (PEM file) that signed the server's certificate for "localhost". */
  caFile: string;
  url(user: string, password: string, query?: Record<string, string>): string;
  stop(): Promise<void>;
}

const PG_BIN = "/usr/lib/postgresql";

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed:\n${text}`);
  return text;
}

/** Where the PostgreSQL server binaries are, or null. */
async function binDir(): Promise<string | null> {
  try {
    for await (const e of Deno.readDir(PG_BIN)) {
      const dir = `${PG_BIN}/${e.name}/bin`;
      try {
        await Deno.stat(`${dir}/initdb`);
        return dir;
      } catch { /* not this one */ }
    }
  } catch { /* no PostgreSQL installed */ }
  return null;
}

/** Why a cluster cannot be started here, or null when it can. */
export async function clusterUnavailable(): Promise<string | null> {
  if (Deno.build.os !== "linux") return "needs Linux";
  if (!(await binDir())) return `no initdb under ${PG_BIN}`;
  if (Deno.uid() !== 0) return "needs root to run initdb as the postgres user";
  return null;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Starts a cluster (about 2 s). */
export async function startCluster(): Promise<Cluster> {
  const why = await clusterUnavailable();
  if (why) throw new Error(`cannot start a PostgreSQL cluster: ${why}`);
  const bin = (await binDir())!;
  const dir = await Deno.makeTempDir({ prefix: "authsvc-pg-" });
  const data = `${dir}/data`;
  const port = freePort();
  await Deno.chmod(dir, 0o755);
  // A CA and a server certificate for "localhost" signed by it (ca.crt, server.crt, server.key).
  await localhostCertificate(dir);
  await run("chown", ["-R", "postgres:postgres", dir]);
  await Deno.chmod(`${dir}/server.key`, 0o600);
  const asPg = (cmd: string, args: string[]) =>
    run("runuser", ["-u", "postgres", "--", `${bin}/${cmd}`, ...args]);
  await asPg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  await Deno.writeTextFile(
    `${data}/postgresql.conf`,
    [
      `port = ${port}`,
      "listen_addresses = 'localhost'",
      `unix_socket_directories = '${dir}'`,
      "ssl = on",
      `ssl_cert_file = '${dir}/server.crt'`,
      `ssl_key_file = '${dir}/server.key'`,
      "fsync = off",
      "max_connections = 30",
      "shared_buffers = 16MB",
    ].join("\n") + "\n",
    { append: true },
  );
  await Deno.writeTextFile(
    `${data}/pg_hba.conf`,
    ["local all all trust"].concat(
      ...["127.0.0.1/32", "::1/128"].map((net) => [
        `hostnossl all tls_user ${net} reject`,
        `host all tls_user ${net} scram-sha-256`,
        `host all scram_user ${net} scram-sha-256`,
        `host all md5_user ${net} md5`,
        `host all plain_user ${net} password`,
        `host all postgres ${net} trust`,
      ]),
    ).join("\n") + "\n",
  );
  await asPg("pg_ctl", ["-D", data, "-l", `${dir}/log`, "-w", "-t", "30", "start"]);
  const psql = (sql: string) =>
    run(
      "runuser",
      ["-u", "postgres", "--", `${bin}/psql`, "-h", dir, "-p", String(port)].concat([
        "-d",
        "postgres",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        sql,
      ]),
    );
  await psql(
    `SET password_encryption = 'scram-sha-256';
     CREATE ROLE scram_user LOGIN PASSWORD 'scram-pw';
     CREATE ROLE tls_user LOGIN PASSWORD 'tls-pw';
     CREATE ROLE plain_user LOGIN PASSWORD 'plain-pw';
     SET password_encryption = 'md5';
     CREATE ROLE md5_user LOGIN PASSWORD 'md5-pw';`,
  );
  let stopped = false;
  return {
    port,
    caFile: `${dir}/ca.crt`,
    url: (user, password, query = {}) => {
      const q = new URLSearchParams(query).toString();
      return `postgres://${encodeURIComponent(user)}:${
        encodeURIComponent(password)
      }@localhost:${port}/postgres${q ? `?${q}` : ""}`;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await asPg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
