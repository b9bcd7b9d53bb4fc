/**
 * Keeps docs/compat.md true: it is generated here from
 * - the conformance cases (collected from tests/conformance/*_test.ts without running them),
 * - GoTrue's error codes and the statuses it answers them with
 *   (gotrue_error_codes.json, read from supabase/auth at UPSTREAM_COMMIT),
 * - our ErrorCode union (server/auth/errors.ts) and the statuses our code answers
 *   each with (the throw sites read from the source with the TypeScript parser,
 *   their statuses from server/api/errors.ts),
 * - our routes (the running app's route table) against the endpoint list of compat_data.ts.
 *
 * The test fails when the committed file differs; `UPDATE_COMPAT=1 deno test --lock=deno.dev.lock -A
 * tests/conformance/compat_test.ts` rewrites it.
 */
import ts from "typescript";
import { AuthError, type ErrorCode, statusOf } from "../../server/api/errors.ts";
import type { Situation } from "../../server/auth/errors.ts";
import { startTestServer } from "../helpers/server.ts";
import { assert, type CollectedCase, UPSTREAM_COMMIT } from "./_helpers.ts";
import {
  ENDPOINTS,
  EXTERNAL_REMAINDER,
  EXTRA_DIFFERENCES,
  NOT_PORTED_REASONS,
  UPSTREAM_CASES,
} from "./compat_data.ts";

const ROOT = new URL("../../", import.meta.url);
const DOC = new URL("docs/compat.md", ROOT);

async function collectCases(): Promise<CollectedCase[]> {
  const sink: CollectedCase[] = [];
  (globalThis as { __conformanceCases?: CollectedCase[] }).__conformanceCases = sink;
  try {
    const dir = new URL("./", import.meta.url);
    const files = [...Deno.readDirSync(dir)]
      .map((e) => e.name)
      .filter((n) => n.endsWith("_test.ts") && n !== "compat_test.ts")
      .sort();
    for (const f of files) await import(new URL(f, dir).href);
  } finally {
    delete (globalThis as { __conformanceCases?: CollectedCase[] }).__conformanceCases;
  }
  return sink;
}

/** Every TypeScript file under server/. */
function serverFiles(dir = new URL("server/", ROOT)): URL[] {
  const out: URL[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const u = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) out.push(...serverFiles(u));
    else if (e.name.endsWith(".ts")) out.push(u);
  }
  return out;
}

/**
 * The statuses our code answers each error code with: ApiError(status, "code"),
 * super(status, "code"), badRequest/unprocessable/tooManyRequests, and
 * CallbackError(error, "code") (302: the provider callback's redirect); for
 * AuthError("code", msg, { situation }), super("code", ...) and
 * invalid(msg, situation), the status api/errors.ts gives it.
 */
function ourStatuses(): Map<string, Set<number>> {
  const found = new Map<string, Set<number>>();
  const add = (code: string, status: number) => {
    if (!found.has(code)) found.set(code, new Set());
    found.get(code)!.add(status);
  };
  const str = (n: ts.Node | undefined) =>
    n && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : undefined;
  const num = (n: ts.Node | undefined) => n && ts.isNumericLiteral(n) ? Number(n.text) : undefined;
  /** The literal `situation` member of an options object, if any. */
  const situation = (n: ts.Node | undefined): Situation | undefined => {
    if (!n || !ts.isObjectLiteralExpression(n)) return str(n) as Situation | undefined;
    for (const p of n.properties) {
      if (ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === "situation") {
        return str(p.initializer) as Situation | undefined;
      }
    }
    return undefined;
  };
  const mapped = (code: string, s?: Situation) =>
    add(code, statusOf(new AuthError(code as ErrorCode, "", { situation: s })));
  for (const file of serverFiles()) {
    const text = Deno.readTextFileSync(file);
    const sf = ts.createSourceFile(file.pathname, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isNewExpression(node) || ts.isCallExpression(node)) {
        const callee = node.expression;
        const name = ts.isIdentifier(callee)
          ? callee.text
          : callee.kind === ts.SyntaxKind.SuperKeyword
          ? "super"
          : "";
        const args = node.arguments ?? ts.factory.createNodeArray();
        if ((name === "ApiError" || name === "super") && num(args[0]) && str(args[1])) {
          add(str(args[1])!, num(args[0])!);
        } else if ((name === "AuthError" || name === "super") && str(args[0])) {
          mapped(str(args[0])!, situation(args[2]));
        } else if (name === "invalid" && args.length >= 1) {
          mapped("validation_failed", situation(args[1]));
        } else if (name === "badRequest" || name === "unprocessable") {
          const status = name === "badRequest" ? 400 : 422;
          add(str(args[1]) ?? (args.length < 2 ? "validation_failed" : ""), status);
        } else if (name === "tooManyRequests" && str(args[0])) {
          add(str(args[0])!, 429);
        } else if (name === "CallbackError" && str(args[1])) {
          add(str(args[1])!, 302); // a provider callback's error: a redirect carrying the code
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  found.delete("");
  return found;
}

/** The members of the ErrorCode union of server/auth/errors.ts. */
function ourCodes(): string[] {
  const text = Deno.readTextFileSync(new URL("server/auth/errors.ts", ROOT));
  const union = text.slice(
    text.indexOf("export type ErrorCode"),
    text.indexOf(";", text.indexOf("export type ErrorCode")),
  );
  return [...union.matchAll(/"([a-z0-9_]+)"/g)].map((m) => m[1]);
}

function statuses(s: Iterable<number> | undefined): string {
  const list = [...(s ?? [])].sort();
  return list.length ? list.join(", ") : "—";
}

/** The upstream auth-js counts block, markers included, as docs/upstream.md has it. */
function upstreamCounts(): string {
  const text = Deno.readTextFileSync(new URL("docs/upstream.md", ROOT));
  const start = "<!-- upstream auth-js counts: upstream_test.ts checks this list -->";
  const end = "<!-- end of counts -->";
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  assert.ok(a >= 0 && b > a, "docs/upstream.md has no counts block");
  return text.slice(a, b + end.length);
}

async function render(): Promise<string> {
  const cases = await collectCases();
  const gotrue = JSON.parse(
    await Deno.readTextFile(new URL("gotrue_error_codes.json", import.meta.url)),
  ) as { commit: string; codes: Record<string, number[]> };
  const ours = ourStatuses();
  const declared = new Set(ourCodes());

  // our routes, from the running app's table
  const srv = await startTestServer();
  let routes: Set<string>;
  try {
    routes = new Set(
      srv.app.app.routes
        .filter((r) => r.method !== "ALL" && r.method !== "HEAD" && !r.path.includes("*"))
        .map((r) => `${r.method} ${r.path}`),
    );
  } finally {
    await srv.close();
  }
  const listed = new Set(ENDPOINTS.filter((e) => e.ours).map((e) => `${e.method} ${e.path}`));
  for (const r of routes) {
    assert.ok(listed.has(r), `route ${r} is missing from compat_data.ts ENDPOINTS`);
  }
  for (const l of listed) {
    assert.ok(routes.has(l), `ENDPOINTS lists ${l}, which the server does not serve`);
  }
  for (const code of ours.keys()) {
    assert.ok(declared.has(code), `the server throws "${code}", which ErrorCode does not declare`);
  }

  // counts per upstream file
  const byFile = new Map<string, CollectedCase[]>();
  for (const c of cases) byFile.set(c.file, [...(byFile.get(c.file) ?? []), c]);
  const names = new Set<string>();
  for (const c of cases) {
    const key = `${c.file} ${c.name}`;
    assert.ok(!names.has(key), `case named twice: ${key}`);
    names.add(key);
  }
  const differences = cases.filter((c) => c.difference);
  let notPorted = 0;
  const fileRows: string[] = [];
  const notPortedRows: string[] = [];
  for (const file of Object.keys(UPSTREAM_CASES).sort()) {
    const ported = byFile.get(file)?.length ?? 0;
    const diff = byFile.get(file)?.filter((c) => c.difference).length ?? 0;
    const rest = Math.max(0, UPSTREAM_CASES[file] - ported);
    notPorted += rest;
    fileRows.push(`| ${file} | ${UPSTREAM_CASES[file]} | ${ported} | ${diff} | ${rest} |`);
    if (rest) {
      const why = NOT_PORTED_REASONS[file] ??
        (file.startsWith("external_") ? EXTERNAL_REMAINDER : "not ported yet");
      notPortedRows.push(`| ${file} | ${rest} | ${why} |`);
    }
  }
  for (const file of byFile.keys()) {
    assert.ok(file in UPSTREAM_CASES, `${file} is missing from UPSTREAM_CASES`);
  }

  const codes = [...new Set([...Object.keys(gotrue.codes), ...declared])].sort();
  const codeRows = codes.map((c) => {
    const g = c in gotrue.codes ? statuses(gotrue.codes[c]) : "(not a GoTrue code)";
    const o = declared.has(c) ? statuses(ours.get(c)) : "(not used)";
    return `| \`${c}\` | ${g} | ${o} |`;
  });
  const endpointRows = ENDPOINTS.map((e) =>
    `| ${e.method} | \`${e.path}\` | ${e.gotrue || "—"} | ${e.ours || "not served"} | ${
      e.note ?? ""
    } |`
  );
  const diffRows = [
    ...differences.map((c) => `| ${c.file} ${c.name} | ${c.difference} |`),
    ...EXTRA_DIFFERENCES.map((d) => `| ${d.topic} | ${d.reason} |`),
  ];

  return `# Compatibility with GoTrue

<!-- Generated by tests/conformance/compat_test.ts; edit compat_data.ts or the code, then run
     UPDATE_COMPAT=1 deno test --lock=deno.dev.lock -A tests/conformance/compat_test.ts -->

This server answers like GoTrue (\`supabase/auth\`), so applications and \`@supabase/auth-js\`
written for GoTrue work unchanged. The evidence is GoTrue's own API tests
(\`internal/api/*_test.go\` at commit \`${UPSTREAM_COMMIT}\`) ported to HTTP-level tests in
\`tests/conformance/\`: one test step per upstream case, named after its file and Go test
function, run by \`deno task test\`.

## Conformance counts

| | cases |
|---|---|
| ported | ${cases.length} |
| passing | ${cases.length} (the suite is part of \`deno task test\`; a failing case fails the build) |
| documented differences (among the ported) | ${differences.length} |
| not ported | ${notPorted} |

A documented difference is a case where we deliberately answer otherwise; it stays in the suite
and asserts our answer. Upstream cases are counted as Go test functions, or their named
subcases where a function has them; a ported file may have a few more cases than upstream where
one upstream case covers several configurations.

| upstream file | upstream cases | ported | differences | not ported |
|---|---|---|---|---|
${fileRows.join("\n")}

### Not ported

| upstream file | cases | why |
|---|---|---|
${notPortedRows.join("\n")}

## The upstream auth-js tests

The official client's own integration tests (\`@supabase/auth-js\`) are ported to tests of ours in
\`tests/upstream/auth-js/\` that drive the published client against this server, set up as the
GoTrue instances they expect, in \`deno task test\`; every upstream case is ported or listed as out
of scope with its reason ([upstream.md](upstream.md)). The counts
(\`tests/upstream/auth-js/upstream_test.ts\` checks them):

${upstreamCounts()}

## Deliberate differences

| case or topic | what we do, and why |
|---|---|
${diffRows.join("\n")}

## Endpoints

Success status; \`:name\` is a path parameter.

| method | path | GoTrue | ours | note |
|---|---|---|---|---|
${endpointRows.join("\n")}

## Error codes

Every \`error_code\` GoTrue defines (\`internal/api/apierrors/errorcode.go\`) and every one ours
declares (\`server/auth/errors.ts\`), with the HTTP statuses each is answered with: GoTrue's read
from its source at \`${gotrue.commit}\`, ours from the statuses our code throws it with (302: in the
redirect of a provider callback). "—": never answered.

| error_code | GoTrue | ours |
|---|---|---|
${codeRows.join("\n")}
`;
}

const README = new URL("README.md", ROOT);
/** The README's paragraph of counts (deno fmt may wrap it). */
const README_LINE = /^GoTrue fidelity: [^]*?(?=\n\n)/m;

/** The README's one line of counts, taken from the generated document. */
function readmeLine(doc: string): string {
  const n = (label: string) => new RegExp(`^\\| ${label}\\s*\\| (\\d+)`, "m").exec(doc)![1];
  return `GoTrue fidelity: ${n("ported")} of GoTrue's own API test cases ported and passing, ${
    n("documented differences \\(among the ported\\)")
  } of them documented differences, ${
    n("not ported")
  } not ported ([docs/compat.md](docs/compat.md)).`;
}

/** Formats Markdown as `deno fmt` does (the repository's check), so the committed file passes it. */
async function fmt(markdown: string): Promise<string> {
  const p = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    cwd: new URL(".", ROOT).pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = p.stdin.getWriter();
  await w.write(new TextEncoder().encode(markdown));
  await w.close();
  const out = await p.output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

Deno.test("docs/compat.md matches the conformance suite, the error codes and the routes", async () => {
  const want = await fmt(await render());
  const readme = await Deno.readTextFile(README);
  if (Deno.env.get("UPDATE_COMPAT") === "1") {
    await Deno.writeTextFile(DOC, want);
    await Deno.writeTextFile(README, await fmt(readme.replace(README_LINE, readmeLine(want))));
    return;
  }
  assert.equal(
    README_LINE.exec(readme)?.[0].replace(/\s+/g, " "),
    readmeLine(want),
    "README.md's counts are out of date: UPDATE_COMPAT=1 deno test --lock=deno.dev.lock -A tests/conformance/compat_test.ts",
  );
  let have = "";
  try {
    have = await Deno.readTextFile(DOC);
  } catch { /* missing: reported below */ }
  assert.equal(
    have,
    want,
    "docs/compat.md is out of date: UPDATE_COMPAT=1 deno test --lock=deno.dev.lock -A tests/conformance/compat_test.ts",
  );
});
