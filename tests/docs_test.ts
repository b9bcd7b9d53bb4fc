/**
 * The documents agree with the tree (issue 46, item 8): every page under
 * docs/ can be reached from the README by following links, and every
 * relative link of the README and of docs/ names a file that exists, and a
 * heading of it when it names one (`page.md#heading`, GitHub's anchors).
 * docs/server/api.md lists exactly the routes the server's route table has
 * (issue 39, item 5).
 */
import assert from "node:assert/strict";
import { routeList } from "../server/api/routes.ts";

const ROOT = new URL("../", import.meta.url);

/** Every Markdown file under `dir`, as paths relative to the repository. */
function pages(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(new URL(dir, ROOT))) {
    const path = `${dir}${e.name}`;
    if (e.isDirectory) out.push(...pages(`${path}/`));
    else if (e.name.endsWith(".md")) out.push(path);
  }
  return out.sort();
}

/** Relative link targets of a Markdown text, outside code blocks: [text](target). */
function links(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1])
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t)); // not https:, mailto:, ...
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/`/g, "").replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchors(text: string): Set<string> {
  const prose = text.replace(/```[\s\S]*?```/g, "");
  return new Set([...prose.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => anchor(m[1])));
}

/** A link target resolved against the page it is on: [repository path, anchor]. */
function resolve(from: string, target: string): [string, string] {
  const [path, hash = ""] = target.split("#");
  const url = path ? new URL(path, new URL(from, ROOT)) : new URL(from, ROOT);
  return [decodeURIComponent(url.pathname.slice(ROOT.pathname.length)), hash];
}

function read(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

Deno.test("every page under docs/ can be reached from the README", () => {
  const seen = new Set<string>();
  const todo = ["README.md"];
  while (todo.length) {
    const page = todo.pop()!;
    if (seen.has(page)) continue;
    seen.add(page);
    for (const t of links(read(page))) {
      const [path] = resolve(page, t);
      if (path.endsWith(".md") && !seen.has(path)) todo.push(path);
    }
  }
  const unreachable = pages("docs/").filter((p) => !seen.has(p));
  assert.deepEqual(unreachable, [], "link these from the README or a page it links to");
});

Deno.test("every relative link of the README and docs/ names a file (and heading) that exists", () => {
  const broken: string[] = [];
  for (const page of ["README.md", ...pages("docs/")]) {
    for (const t of links(read(page))) {
      const [path, hash] = resolve(page, t);
      let text: string;
      try {
        const info = Deno.statSync(new URL(path, ROOT));
        if (info.isDirectory || !path.endsWith(".md")) continue; // a file or folder that exists
        text = read(path);
      } catch {
        broken.push(`${page}: ${t} (no such file)`);
        continue;
      }
      if (hash && !anchors(text).has(hash)) broken.push(`${page}: ${t} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

/** The routes of docs/server/api.md's "Every route" table, as "METHOD /path". */
function documentedRoutes(): string[] {
  const text = read("docs/server/api.md");
  const start = text.indexOf("\n## Every route\n");
  assert.ok(start >= 0, 'docs/server/api.md has a "## Every route" section');
  const end = text.indexOf("\n## ", start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\|\s*`([A-Z]+)`\s*\|\s*`([^`]+)`\s*\|/gm)]
    .map((m) => `${m[1]} ${m[2]}`);
}

Deno.test("docs/server/api.md lists every route of the route table, and no other", () => {
  const table = routeList().map((r) => `${r.method} ${r.path}`);
  const documented = documentedRoutes();
  assert.ok(table.length > 30, `the route table has its rows (${table.length})`);
  const twice = documented.filter((r, i) => documented.indexOf(r) !== i);
  assert.deepEqual(twice, [], "routes listed twice in docs/server/api.md");
  const missing = table.filter((r) => !documented.includes(r));
  assert.deepEqual(missing, [], "routes of server/api/routes.ts missing from docs/server/api.md");
  const unknown = documented.filter((r) => !table.includes(r));
  assert.deepEqual(unknown, [], "routes in docs/server/api.md that the route table does not have");
});
