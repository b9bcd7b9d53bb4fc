/**
 * The layers under server/ (docs/architecture.md, "Layers"): a request goes
 * api → auth (the use cases) → store → db, and auth calls the adapters mail,
 * sms and providers. No import runs the other way, the adapters take from
 * auth/ only its error type, nothing below api/ imports the service container,
 * no import cycle exists, and a handler in api/ writes no audit entry, user,
 * mail, SMS or clean-up of its own. Reads the source with the TypeScript
 * parser; needs no database.
 */
import assert from "node:assert/strict";
import ts from "typescript";

const ROOT = new URL("../../", import.meta.url);
const SERVER = new URL("server/", ROOT);

/** The domain: knows nothing of HTTP. */
const DOMAIN = ["auth/", "mail/", "sms/", "providers/"];
/** Also kept free of server/api/, but for the HTTP middleware they define. */
const SUPPORT = ["security/", "observe/"];
const MIDDLEWARE = new Set(["security/middleware.ts", "observe/request.ts"]);

interface Source {
  /** Path under server/, e.g. "auth/sessions.ts". */
  path: string;
  /** Every module it imports (static, re-exported or dynamic), as paths under server/ when inside it. */
  imports: string[];
  /** Its string and template literals. */
  literals: string[];
  /** The callee of every call, as written (`s.audit.record`, `sendActionMail`). */
  calls: string[];
}

function sources(): Source[] {
  const out: Source[] = [];
  const walk = (dir: URL) => {
    for (const e of Deno.readDirSync(dir)) {
      const u = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
      if (e.isDirectory) walk(u);
      else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(read(u));
    }
  };
  walk(SERVER);
  return out;
}

function read(file: URL): Source {
  const sf = ts.createSourceFile(
    file.pathname,
    Deno.readTextFileSync(file),
    ts.ScriptTarget.Latest,
    true,
  );
  const imports: string[] = [];
  const literals: string[] = [];
  const calls: string[] = [];
  const target = (spec: string) => {
    if (!spec.startsWith(".")) return spec;
    const abs = new URL(spec, file).pathname;
    return abs.startsWith(SERVER.pathname) ? abs.slice(SERVER.pathname.length) : abs;
  };
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n)) calls.push(n.expression.getText(sf).replace(/\s+/g, ""));
    if (
      (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier &&
      ts.isStringLiteral(n.moduleSpecifier)
    ) {
      imports.push(target(n.moduleSpecifier.text));
    } else if (
      ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] && ts.isStringLiteralLike(n.arguments[0])
    ) {
      imports.push(target(n.arguments[0].text));
    } else if (ts.isStringLiteralLike(n)) {
      literals.push(n.text);
    } else if (ts.isTemplateExpression(n)) {
      literals.push([n.head.text, ...n.templateSpans.map((s) => s.literal.text)].join(" "));
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return { path: file.pathname.slice(SERVER.pathname.length), imports, literals, calls };
}

const SQL = /\b(SELECT\b[\s\S]*\bFROM|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM)\b/;

const all = sources();

Deno.test("the scan sees the tree: files, imports and SQL", () => {
  assert.ok(all.length > 50, `read ${all.length} files under server/`);
  const sessions = all.find((s) => s.path === "auth/sessions.ts");
  assert.ok(sessions, "auth/sessions.ts is scanned");
  assert.ok(sessions.imports.includes("auth/errors.ts"), "relative imports resolve");
  assert.ok(
    all.some((s) => s.literals.some((l) => SQL.test(l))),
    "the SQL pattern finds the queries of the store",
  );
});

Deno.test("no file of the domain (auth, mail, sms, providers) imports server/api/", () => {
  const wrong = all
    .filter((s) => DOMAIN.some((d) => s.path.startsWith(d)))
    .flatMap((s) => s.imports.filter((i) => i.startsWith("api/")).map((i) => `${s.path} → ${i}`));
  assert.deepEqual(wrong, [], "the domain throws AuthError; server/api/ maps it to HTTP");
});

Deno.test("nor does it reach server/api/ through the modules it imports", () => {
  const byPath = new Map(all.map((s) => [s.path, s]));
  const wrong: string[] = [];
  for (const start of all.filter((s) => DOMAIN.some((d) => s.path.startsWith(d)))) {
    const seen = new Set<string>();
    const path: string[] = [];
    const reach = (p: string): boolean => {
      if (p.startsWith("api/")) return true;
      if (seen.has(p)) return false;
      seen.add(p);
      for (const i of byPath.get(p)?.imports ?? []) {
        path.push(i);
        if (reach(i)) return true;
        path.pop();
      }
      return false;
    };
    if (reach(start.path)) wrong.push([start.path, ...path].join(" → "));
  }
  assert.deepEqual(wrong, []);
});

Deno.test("security/ and observe/ import server/api/ only from their HTTP middleware", () => {
  const wrong = all
    .filter((s) => SUPPORT.some((d) => s.path.startsWith(d)) && !MIDDLEWARE.has(s.path))
    .flatMap((s) => s.imports.filter((i) => i.startsWith("api/")).map((i) => `${s.path} → ${i}`));
  assert.deepEqual(wrong, []);
});

Deno.test("no file of server/api/ imports server/db/ or holds SQL", () => {
  const api = all.filter((s) => s.path.startsWith("api/"));
  assert.ok(api.length > 10);
  const wrong = api.flatMap((s) => [
    ...s.imports.filter((i) => i.startsWith("db/")).map((i) => `${s.path} imports ${i}`),
    ...s.literals.filter((l) => SQL.test(l)).map((l) =>
      `${s.path} holds SQL: ${l.replace(/\s+/g, " ").slice(0, 60)}`
    ),
  ]);
  assert.deepEqual(wrong, [], "handlers call the domain; SQL lives in server/store/");
});

Deno.test("SQL is written only in server/store/ (and the migrator and drivers in server/db/)", () => {
  const wrong = all
    .filter((s) => !s.path.startsWith("store/") && !s.path.startsWith("db/"))
    .flatMap((s) =>
      s.literals.filter((l) => SQL.test(l)).map((l) =>
        `${s.path} holds SQL: ${l.replace(/\s+/g, " ").slice(0, 60)}`
      )
    );
  assert.deepEqual(wrong, [], "domain services call a store class (docs/architecture.md)");
  assert.ok(all.some((s) => s.path.startsWith("store/") && s.literals.some((l) => SQL.test(l))));
});

/** The adapters: they send, fetch and render for the domain, and decide nothing. */
const ADAPTERS = ["mail/", "sms/", "providers/"];

Deno.test("mail/, sms/ and providers/ import from auth/ only its error type", () => {
  const wrong = all
    .filter((s) => ADAPTERS.some((d) => s.path.startsWith(d)))
    .flatMap((s) =>
      s.imports.filter((i) => i.startsWith("auth/") && i !== "auth/errors.ts")
        .map((i) => `${s.path} → ${i}`)
    );
  assert.deepEqual(wrong, [], "the domain calls its adapters, not the other way");
});

Deno.test("no file of auth/, store/, mail/, sms/ or providers/ imports the service container", () => {
  const below = ["auth/", "store/", ...ADAPTERS];
  const wrong = all
    .filter((s) => below.some((d) => s.path.startsWith(d)))
    .flatMap((s) => s.imports.filter((i) => i === "services.ts").map((i) => `${s.path} → ${i}`));
  assert.deepEqual(wrong, [], "the domain names what it needs in auth/deps.ts");
});

/** The import cycles among `sources` (Tarjan's strongly connected components). */
function cycles(sources: Source[]): string[][] {
  const edges = new Map(sources.map((s) => [s.path, s.imports.filter((i) => i !== s.path)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

Deno.test("the cycle finder finds a cycle", () => {
  const src = (path: string, imports: string[]) => ({ path, imports, literals: [], calls: [] });
  assert.deepEqual(
    cycles([src("a.ts", ["b.ts"]), src("b.ts", ["c.ts"]), src("c.ts", ["a.ts"]), src("d.ts", [])]),
    [["a.ts", "b.ts", "c.ts"]],
  );
});

Deno.test("no import cycle under server/ (type imports count)", () => {
  assert.deepEqual(cycles(all), []);
});

/**
 * What only a use case does (issue 39): audit entries, user writes, mail and
 * SMS sends, clean-up after failures. A handler parses, makes one use-case
 * call and answers.
 */
const DECISIONS: readonly [string, RegExp][] = [
  ["audit entry", /\.audit\.record$/],
  [
    "user write",
    /\.users\.(create|createWithIdentities|update|updateMerging|delete|softDelete|syncLocalIdentity|createIdentity|deleteIdentity|deleteIdentitiesExcept|addProvider|touchIdentity|transaction)$|^(userCreated|softDeleteUser|updateUserAsAdmin|linkIdentity|unlinkIdentity|signInUser)$/,
  ],
  [
    "mail or SMS send",
    /\.mailer\.(send|notify)$|\.sms\.send\w*$|^(sendActionMail|sendEmailChangeMails|withoutMail|generateActionLink)$/,
  ],
  [
    "clean-up or session write",
    /\.otp\.(revoke\w*|issue)$|\.mfa\.(deleteFactor|updateFactor|enroll)$|\.sessions\.(logout|endAll|issue|signUp|reissue|refresh)$/,
  ],
];

function decisionsIn(sources: Source[]): string[] {
  return sources.flatMap((s) =>
    s.calls.flatMap((call) =>
      DECISIONS.filter(([, re]) => re.test(call)).map(([what]) => `${s.path}: ${what} (${call})`)
    )
  );
}

Deno.test("the decision scan finds the use cases' audit entries, writes and sends", () => {
  const found = decisionsIn(all.filter((s) => s.path.startsWith("auth/")));
  for (const [what] of DECISIONS) {
    assert.ok(found.some((f) => f.includes(`: ${what} (`)), `no ${what} found under auth/`);
  }
});

Deno.test("handlers in server/api/ write no audit entry, user, mail, SMS or clean-up", () => {
  assert.deepEqual(decisionsIn(all.filter((s) => s.path.startsWith("api/"))), []);
});
