/**
 * The container files (Dockerfile, compose.yaml), checked as far as these
 * machines allow: they cannot pull images or run a Docker daemon, so the
 * image is not built here. What is checked: compose.yaml parses and wires the
 * server to PostgreSQL with a health-gated start; the Dockerfile is
 * multi-stage, builds with the repository's own compile script and Deno
 * version, copies only paths that exist, runs as a non-root user, and its
 * HEALTHCHECK is the `healthcheck` subcommand (tested in ops_test.ts); the
 * data lives in `VOLUME /data`, which the README's `docker run` line names;
 * `.dockerignore` keeps secrets, data and build output out of the build
 * context and lets every COPY source in; docs/operations.md says where the
 * image is built.
 */
import assert from "node:assert/strict";
import { parseYaml } from "../../helpers/deps.ts";

const ROOT = new URL("../../../", import.meta.url);

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Instruction[] {
  const joined = text.replace(/\\\n/g, " ");
  return joined.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const m = /^([A-Z]+)\s+(.*)$/.exec(l);
      if (!m) throw new Error(`not a Dockerfile instruction: ${l}`);
      return { op: m[1], args: m[2] };
    });
}

Deno.test("Dockerfile: multi-stage, compiled with the repository's script, non-root, health-checked", async () => {
  const text = await Deno.readTextFile(new URL("Dockerfile", ROOT));
  const ins = instructions(text);
  const KNOWN = new Set([
    "ARG",
    "FROM",
    "WORKDIR",
    "COPY",
    "RUN",
    "ENV",
    "USER",
    "EXPOSE",
    "HEALTHCHECK",
    "ENTRYPOINT",
    "CMD",
    "VOLUME",
    "LABEL",
  ]);
  for (const i of ins) assert.ok(KNOWN.has(i.op), `unknown instruction ${i.op}`);
  const froms = ins.filter((i) => i.op === "FROM");
  assert.equal(froms.length, 2, "a build stage and a run stage");
  assert.match(froms[0].args, /^denoland\/deno:\$\{DENO_VERSION\} AS build$/);
  const denoVersion = /ARG DENO_VERSION=(\S+)/.exec(text)?.[1];
  assert.equal(denoVersion, Deno.version.deno, "the image builds with the Deno the tests run on");
  assert.ok(ins.some((i) => i.op === "RUN" && i.args.includes("scripts/compile.ts")));
  // every COPY source of the build stage exists in the repository
  for (const i of ins.filter((i) => i.op === "COPY" && !i.args.includes("--from"))) {
    const parts = i.args.split(/\s+/);
    for (const src of parts.slice(0, -1)) {
      await Deno.stat(new URL(src, ROOT)); // throws when missing
    }
  }
  // the run stage: after the second FROM
  const run = ins.slice(ins.indexOf(froms[1]));
  const user = run.find((i) => i.op === "USER");
  assert.ok(user && !/^(root|0)(:|$)/.test(user.args), "runs as a non-root user");
  const hc = run.find((i) => i.op === "HEALTHCHECK");
  assert.ok(hc, "has a HEALTHCHECK");
  assert.match(hc.args, /CMD \["\/usr\/local\/bin\/authsvc", "healthcheck"\]/);
  assert.ok(run.some((i) => i.op === "ENTRYPOINT" && i.args.includes("/usr/local/bin/authsvc")));
  assert.ok(run.some((i) => i.op === "EXPOSE" && i.args === "8081"));
});

Deno.test("compose.yaml: PostgreSQL, the server built here, started once the database is healthy", async () => {
  const doc = parseYaml(await Deno.readTextFile(new URL("compose.yaml", ROOT))) as {
    services: Record<string, Record<string, unknown>>;
    volumes?: Record<string, unknown>;
  };
  const { db, auth } = doc.services;
  assert.match(String(db.image), /^postgres:\d+/);
  assert.ok((db.healthcheck as { test: string[] }).test.includes("pg_isready"));
  assert.equal(auth.build, ".");
  assert.deepEqual(auth.depends_on, { db: { condition: "service_healthy" } });
  const env = auth.environment as Record<string, string>;
  assert.match(env.DATABASE_URL, /^postgres:\/\/auth:.*@db:5432\/auth/);
  for (const name of ["AUTHSVC_SITE_URL", "AUTHSVC_API_EXTERNAL_URL", "AUTHSVC_JWT_SECRET"]) {
    assert.ok(name in env, `${name} is passed to the server`);
  }
  assert.match(env.AUTHSVC_JWT_SECRET, /:\?/, "a missing secret stops compose with a message");
  assert.deepEqual(auth.ports, ["8081:8081"]);
  assert.ok(doc.volumes && "pgdata" in doc.volumes);
});

/**
 * Whether `.dockerignore` leaves `path` out of the build context: Docker's rules, as far as
 * this file uses them (`*` within a name, a pattern matching a directory leaves out what is
 * in it, `!` takes back, the last matching line wins).
 */
function ignored(patterns: string[], path: string): boolean {
  let out = false;
  for (const line of patterns) {
    const keep = line.startsWith("!");
    const pattern = (keep ? line.slice(1) : line).replace(/\/+$/, "");
    const re = new RegExp(
      "^" + pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]*") +
        "(/.*)?$",
    );
    if (re.test(path)) out = !keep;
  }
  return out;
}

async function dockerignore(): Promise<string[]> {
  return (await Deno.readTextFile(new URL(".dockerignore", ROOT))).split("\n")
    .map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
}

Deno.test(".dockerignore: no secrets, data or build output in the context; every COPY source in", async () => {
  const patterns = await dockerignore();
  for (
    const path of [
      ".env",
      ".env.production",
      ".authsvc/data/PG_VERSION",
      ".authsvc/data/jwt_secret",
      ".tools/node_modules/deno",
      "dist/npm/package.json",
      "node_modules/x",
      "test-output/console/sign-in.png",
      ".git/HEAD",
    ]
  ) assert.ok(ignored(patterns, path), `${path} stays out of the build context`);
  const ins = instructions(await Deno.readTextFile(new URL("Dockerfile", ROOT)));
  const sources = ins.filter((i) => i.op === "COPY" && !i.args.includes("--from"))
    .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
  assert.ok(sources.length >= 5);
  for (const src of sources) {
    assert.ok(!ignored(patterns, src.replace(/^\.\//, "")), `${src} is copied, so not ignored`);
  }
  assert.ok(!ignored(patterns, "server/main.ts"));
});

Deno.test("the image keeps its data in VOLUME /data, and the README's docker run line names it", async () => {
  const ins = instructions(await Deno.readTextFile(new URL("Dockerfile", ROOT)));
  const run = ins.slice(ins.findLastIndex((i) => i.op === "FROM"));
  const volume = run.findIndex((i) => i.op === "VOLUME");
  assert.ok(volume >= 0, "the run stage declares a volume");
  assert.match(run[volume].args, /^(\/data|\["\/data"\])$/);
  const copy = run.findIndex((i) => i.op === "COPY" && /\s\/data$/.test(i.args));
  assert.ok(copy >= 0 && copy < volume, "the directory is made (owned by the user) before");
  const env = run.filter((i) => i.op === "ENV").map((i) => i.args).join(" ");
  assert.match(env, /AUTHSVC_DB_DATA_DIR=\/data\b/, "the server keeps its data there");

  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const build = /docker build -t (\S+) \./.exec(readme);
  assert.ok(build, "the README says how to build the image");
  // The command's lines, joined where a line ends with a backslash.
  const lines = readme.split("\n");
  let at = lines.findIndex((l) => l.startsWith("docker run "));
  assert.ok(at >= 0, "the README has a docker run line");
  let line = "";
  while (lines[at].endsWith("\\")) line += lines[at++].slice(0, -1);
  line += lines[at];
  assert.match(line, /-v [\w.-]+:\/data\b/, "a named volume at /data");
  assert.ok(line.trim().endsWith(` ${build[1]}`), `it runs the image built above: ${line}`);
  for (const name of ["AUTHSVC_SITE_URL", "AUTHSVC_API_EXTERNAL_URL"]) {
    assert.ok(line.includes(`-e ${name}=`), `${name} is set (required)`);
  }

  const ops = await Deno.readTextFile(new URL("docs/operations.md", ROOT));
  assert.match(ops, /The image is built by CI .*not on the development machines/s);
});
