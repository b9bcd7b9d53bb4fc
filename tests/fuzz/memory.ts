/**
 * Memory probe (a development tool, not a test): the fuzz of harness.ts for
 * FUZZ_PASSES passes (default 4) of FUZZ_REQUESTS (default 300) requests per
 * route. After each pass (the harness has the server under `--inspect`) it
 * collects garbage in the server and prints RSS next to `Deno.memoryUsage()`
 * (JS heap used and committed, external) and the resident memory by kind of
 * mapping (/proc/<pid>/smaps); then it takes a V8 heap snapshot and prints
 * the constructors that grew most since pass 1, the objects new since the
 * previous pass that are still alive with what holds them, and the objects
 * (maps, sets, arrays) that gained the most references.
 *
 *   FUZZ_SEED=20251125 FUZZ_REQUESTS=300 FUZZ_PASSES=4 nice -n 19 \
 *     deno run --lock=deno.dev.lock -A tests/fuzz/memory.ts
 *
 * MEM_HEAP=0 skips the snapshots: each costs the server native memory of its
 * own, so RSS after one is not comparable with RSS before. MEM_SNAPSHOTS=<dir>
 * keeps them (`pass-<n>.heapsnapshot`, for Chrome DevTools' Memory tab).
 * MALLOC_* and GLIBC_TUNABLES reach the server, to try allocator settings.
 * RSS growing while the heap after GC stays flat is the allocator or V8's
 * committed pages, not a leak of objects.
 */
import { runFuzz } from "./harness.ts";
import { runSeed } from "./rng.ts";
import type { ServerProcess } from "../helpers/bench_process.ts";
import type { Inspector } from "../helpers/inspector.ts";

type Summary = Map<string, { count: number; size: number }>;

/** The parts of a V8 heap snapshot read here. */
interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[]];
      edge_fields: string[];
      edge_types: [string[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Edge counts by object id, and the retainer chains of `b`. */
function grownObjects(a: Snapshot, b: Snapshot, top = 10): string[] {
  const meta = b.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const [fType, fName, fId, fEdges] = ["type", "name", "id", "edge_count"].map((f) =>
    meta.node_fields.indexOf(f)
  );
  const types = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const before = new Map<number, number>();
  for (let i = 0; i < a.nodes.length; i += nf) before.set(a.nodes[i + fId], a.nodes[i + fEdges]);
  const { nodes, edges, strings } = b;
  const n = nodes.length / nf;
  const retainer = new Int32Array(n).fill(-1);
  const via = new Int32Array(n).fill(-1);
  for (let i = 0, e = 0; i < n; i++) {
    const end = e + nodes[i * nf + fEdges] * ef;
    for (; e < end; e += ef) {
      const et = edgeTypes[edges[e]];
      const to = edges[e + 2] / nf;
      if (et === "weak" || et === "shortcut" || retainer[to] >= 0) continue;
      if (types[nodes[i * nf + fType]] === "synthetic") continue;
      retainer[to] = i;
      via[to] = e;
    }
  }
  const name = (i: number) =>
    strings[nodes[i * nf + fName]].slice(0, 40) || types[nodes[i * nf + fType]];
  const rows: { i: number; grew: number; now: number }[] = [];
  for (let i = 0; i < n; i++) {
    const t = types[nodes[i * nf + fType]];
    if (t === "code" || t === "hidden" || t === "synthetic") continue;
    const was = before.get(nodes[i * nf + fId]);
    if (was === undefined) continue;
    const now = nodes[i * nf + fEdges];
    if (now > was) rows.push({ i, grew: now - was, now });
  }
  return rows.sort((x, y) => y.grew - x.grew).slice(0, top).map(({ i, grew, now }) => {
    const path: string[] = [];
    for (let cur = i, d = 0; d < 6 && retainer[cur] >= 0; d++) {
      const e = via[cur];
      const et = edgeTypes[edges[e]];
      const label = et === "element" || et === "hidden"
        ? `[${edges[e + 1]}]`
        : strings[edges[e + 1]];
      cur = retainer[cur];
      path.push(`.${label} of ${name(cur)}`);
    }
    return `+${grew} (now ${now}): ${name(i)} ${path.join(" ")}`.slice(0, 400);
  });
}

/**
 * The objects of `b` that `a` (an earlier snapshot of the same inspector
 * session) did not have, by type and constructor, each with its most frequent
 * retainer chain (up to the first object `a` had): what keeps them alive.
 */
function newObjects(a: Snapshot, b: Snapshot, top = 12): string[] {
  const meta = b.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const [fType, fName, fId, fSize, fEdges] = ["type", "name", "id", "self_size", "edge_count"]
    .map((f) => meta.node_fields.indexOf(f));
  const types = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const old = new Set<number>();
  for (let i = 0; i < a.nodes.length; i += nf) old.add(a.nodes[i + fId]);
  const { nodes, edges, strings } = b;
  const n = nodes.length / nf;
  // retainers[to] = [from, edge, from, edge, ...] over strong edges
  const retainers: number[][] = Array.from({ length: n }, () => []);
  for (let i = 0, e = 0; i < n; i++) {
    const end = e + nodes[i * nf + fEdges] * ef;
    for (; e < end; e += ef) {
      const et = edgeTypes[edges[e]];
      if (et !== "weak" && et !== "shortcut") retainers[edges[e + 2] / nf].push(i, e);
    }
  }
  const isOld = (i: number) => old.has(nodes[i * nf + fId]);
  const label = (i: number) => {
    const t = types[nodes[i * nf + fType]];
    const name = strings[nodes[i * nf + fName]].slice(0, 50);
    return t.includes("string")
      ? `"${name.slice(0, 30)}"`
      : `${name || t}${isOld(i) ? "(old)" : ""}`;
  };
  const edgeLabel = (e: number) => {
    const et = edgeTypes[edges[e]];
    return et === "element" || et === "hidden" ? `[${edges[e + 1]}]` : strings[edges[e + 1]];
  };
  const groups = new Map<string, { count: number; size: number; paths: Map<string, number> }>();
  for (let i = 0; i < n; i++) {
    if (isOld(i)) continue;
    const t = types[nodes[i * nf + fType]];
    if (t === "code" || t === "hidden" || t === "synthetic") continue; // the JIT's, not ours
    const key = `${t} ${strings[nodes[i * nf + fName]].slice(0, 40)}`;
    const g = groups.get(key) ?? { count: 0, size: 0, paths: new Map() };
    g.count++;
    g.size += nodes[i * nf + fSize];
    const path: string[] = [];
    const seen = new Set<number>([i]);
    for (let cur = i, d = 0; d < 8; d++) {
      const r = retainers[cur];
      let pick = -1;
      let edge = -1;
      for (let k = 0; k < r.length; k += 2) {
        if (seen.has(r[k]) || types[nodes[r[k] * nf + fType]] === "synthetic") continue;
        [pick, edge] = [r[k], r[k + 1]];
        if (isOld(pick)) break; // prefer the way to what the earlier snapshot had
      }
      if (pick < 0) break;
      seen.add(pick);
      path.push(`.${edgeLabel(edge)} of ${label(pick)}`);
      cur = pick;
      if (isOld(pick)) break;
    }
    const p = path.join(" ");
    g.paths.set(p, (g.paths.get(p) ?? 0) + 1);
    groups.set(key, g);
  }
  return [...groups].sort((x, y) => y[1].size - x[1].size).slice(0, top).map(([k, g]) => {
    const [p, c] = [...g.paths].sort((x, y) => y[1] - x[1])[0];
    return `${g.count} × ${k} (${(g.size / 1024).toFixed(0)} kB), ${c} of them ${p.slice(0, 300)}`;
  });
}

/** Count and self size of the snapshot's nodes by type and constructor name. */
function summarise(snap: Snapshot): Summary {
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const { nodes, strings } = snap;
  const [iType, iName, iSize] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const out: Summary = new Map();
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = types[nodes[i + iType]];
    let key = type;
    if (type === "object" || type === "closure" || type === "native" || type === "hidden") {
      key = `${type} ${strings[nodes[i + iName]].slice(0, 80)}`;
    }
    const e = out.get(key) ?? { count: 0, size: 0 };
    e.count++;
    e.size += nodes[i + iSize];
    out.set(key, e);
  }
  return out;
}

/**
 * Resident memory by kind of mapping: the brk heap, anonymous mappings (glibc's
 * thread arenas, large malloc blocks and V8's pages alike), files, and the largest anonymous ones.
 */
async function mappings(pid: number): Promise<string> {
  const text = await Deno.readTextFile(`/proc/${pid}/smaps`);
  const kinds: Record<string, number> = {};
  const anon: { size: number; rss: number }[] = [];
  let name = "";
  let size = 0;
  for (const line of text.split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1] || "[anon]";
      continue;
    }
    const m = /^(Size|Rss):\s+(\d+) kB/.exec(line);
    if (!m) continue;
    const kb = Number(m[2]);
    if (m[1] === "Size") {
      size = kb;
      continue;
    }
    const kind = name.startsWith("/") ? "files" : name;
    kinds[kind] = (kinds[kind] ?? 0) + kb;
    if (name === "[anon]") anon.push({ size, rss: kb });
  }
  anon.sort((a, b) => b.rss - a.rss);
  const by = Object.entries(kinds).sort((a, b) => b[1] - a[1]).map(([k, v]) =>
    `${k} ${Math.round(v / 1024)}`
  ).join(", ");
  const top = anon.slice(0, 8).map((a) =>
    `${Math.round(a.rss / 1024)}/${Math.round(a.size / 1024)}`
  )
    .join(" ");
  return `resident MiB by mapping: ${by}; largest anonymous (resident/size MiB): ${top}; ${anon.length} anonymous mappings`;
}

function mib(n: number): string {
  return (n / 1048576).toFixed(1);
}

async function rssMiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

const seed = runSeed();
const perRoute = Number(Deno.env.get("FUZZ_REQUESTS") ?? 300);
const passes = Number(Deno.env.get("FUZZ_PASSES") ?? 4);
const keep = Deno.env.get("MEM_SNAPSHOTS");
// A snapshot costs the server native memory of its own (the serialiser): RSS after it is not
// comparable with a run without. MEM_HEAP=0 skips them (RSS and the mappings only).
const snapshots = Deno.env.get("MEM_HEAP") !== "0";
const summaries: Summary[] = [];
let previous: Snapshot | undefined;
console.log(`memory probe: FUZZ_SEED=${seed} FUZZ_REQUESTS=${perRoute} FUZZ_PASSES=${passes}`);

async function afterPass(pass: number, srv: ServerProcess, ins: Inspector) {
  const u = await ins.memoryAfterGc();
  console.log(
    `after pass ${pass}: RSS ${await rssMiB(srv.pid)} MiB (after GC), heap used ${
      mib(u.heapUsed)
    } MiB of ${mib(u.heapTotal)} committed, external ${mib(u.external)} MiB`,
  );
  console.log(`  ${await mappings(srv.pid)}`);
  if (!snapshots) return;
  const text = await ins.snapshot();
  if (keep) {
    await Deno.mkdir(keep, { recursive: true });
    await Deno.writeTextFile(`${keep}/pass-${pass}.heapsnapshot`, text);
  }
  const snap = JSON.parse(text) as Snapshot;
  const s = summarise(snap);
  summaries.push(s);
  let total = 0;
  let count = 0;
  for (const v of s.values()) [total, count] = [total + v.size, count + v.count];
  console.log(`  snapshot: ${mib(total)} MiB in ${count} nodes`);
  if (summaries.length > 1) {
    const first = summaries[0];
    const rows = [...s].map(([k, v]) => {
      const f = first.get(k) ?? { count: 0, size: 0 };
      return { k, dc: v.count - f.count, ds: v.size - f.size, count: v.count, size: v.size };
    }).sort((a, b) => b.ds - a.ds).slice(0, 15);
    console.log(`  growth since pass 1 (by self size):`);
    for (const r of rows) {
      console.log(
        `    ${r.ds >= 0 ? "+" : ""}${(r.ds / 1024).toFixed(0)} kB, ${
          r.dc >= 0 ? "+" : ""
        }${r.dc} objects (now ${r.count}, ${(r.size / 1024).toFixed(0)} kB): ${r.k}`,
      );
    }
  }
  if (previous) {
    console.log(`  objects new since pass ${pass - 1} and alive, by what holds them:`);
    for (const line of newObjects(previous, snap)) console.log(`    ${line}`);
    console.log(
      `  objects (maps, sets, arrays, ...) with the most references added since pass ${pass - 1}:`,
    );
    for (const line of grownObjects(previous, snap)) console.log(`    ${line}`);
  }
  previous = snap;
}

const report = await runFuzz({
  seed,
  perRoute,
  passes,
  pairs: Number(Deno.env.get("FUZZ_PAIRS") ?? 3),
  concurrency: 4,
  routeFilter: Deno.env.get("FUZZ_ROUTE") || undefined,
  // Allocator settings to try (MALLOC_ARENA_MAX=2, GLIBC_TUNABLES=...) reach the server.
  serverEnv: Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) =>
      k.startsWith("MALLOC_") || k === "GLIBC_TUNABLES"
    ),
  ),
  afterPass,
});
for (const f of report.failures.slice(0, 10)) console.log(`failure: ${f}`);
console.log(
  `memory probe: ${report.requests} requests in ${report.seconds} s, RSS ${
    JSON.stringify(report.rssMiB)
  } MiB, ${report.failures.length} failures`,
);
