/**
 * The part of Jest the vendored auth-js tests use, over Deno: `describe`, `test`/`it` (with
 * `.each`, `.skip`, `.only`, `.todo`), the four hooks, `expect` (Jest's own, the npm `expect`
 * package), `jest.fn`/`jest.spyOn` (the npm `jest-mock` package), `jest.useFakeTimers` /
 * `setSystemTime` / `useRealTimers` (`@sinonjs/fake-timers`, which Jest's modern timers wrap),
 * and the Node globals the tests touch (`global`, `Buffer`, `require('jsonwebtoken')`).
 * `jest.doMock`/`jest.requireActual` (module mocking) cannot be had outside Jest's module
 * registry: they throw, so a test using them fails and is listed in EXPECTED.md.
 *
 * `collect(file, load)` runs a test file's module with these globals installed and returns the
 * tests it declared, in order; `runTest` runs one of them with Jest's hook order: a block's
 * beforeAll before its first test, beforeEach outer to inner, afterEach inner to outer, a
 * block's afterAll after its last test.
 */
import { expect } from "expect";
import { ModuleMocker } from "jest-mock";
import FakeTimers from "@sinonjs/fake-timers";
import jsonwebtoken from "jsonwebtoken";
import { Buffer } from "node:buffer";

// deno-lint-ignore no-explicit-any
type Any = any;
type Fn = (...args: Any[]) => unknown;

/** A describe block. */
export interface Block {
  name: string;
  parent?: Block;
  beforeAll: Fn[];
  afterAll: Fn[];
  beforeEach: Fn[];
  afterEach: Fn[];
  skip: boolean;
  /** Tests under this block (at any depth), in order; set by collect. */
  tests: TestCase[];
  started: boolean;
  beforeAllError?: unknown;
  done: number;
}

/** One declared test. */
export interface TestCase {
  /** The describe names and the test name, joined with " > ". */
  name: string;
  fn?: Fn;
  timeout?: number;
  block: Block;
  skip: boolean;
  only: boolean;
}

let root: Block | undefined;
let current: Block | undefined;
let collected: TestCase[] = [];

function newBlock(name: string, parent?: Block): Block {
  return {
    name,
    parent,
    beforeAll: [],
    afterAll: [],
    beforeEach: [],
    afterEach: [],
    skip: parent?.skip ?? false,
    tests: [],
    started: false,
    done: 0,
  };
}

function here(): Block {
  if (!current) throw new Error("describe/test called outside a collected test file");
  return current;
}

function fullName(block: Block, name: string): string {
  const parts = [name];
  for (let b: Block | undefined = block; b && b.parent; b = b.parent) parts.unshift(b.name);
  return parts.join(" > ");
}

function describeImpl(name: string, fn: () => unknown, skip = false): void {
  const parent = here();
  const block = newBlock(String(name), parent);
  if (skip) block.skip = true;
  current = block;
  try {
    const r = fn();
    if (r && typeof (r as Promise<unknown>).then === "function") {
      throw new Error(`describe("${name}") returned a promise: Jest needs it synchronous`);
    }
  } finally {
    current = parent;
  }
}

function testImpl(name: string, fn?: Fn, timeout?: number, skip = false, only = false): void {
  const block = here();
  collected.push({
    name: fullName(block, String(name)),
    fn,
    timeout,
    block,
    skip: skip || block.skip || !fn,
    only,
  });
}

/** Jest's `%s`/`%d`/`%i`/`%p`/`%j`/`%o`/`%#` and `$name` title formatting. */
function title(fmt: string, row: unknown, args: unknown[], index: number): string {
  const show = (v: unknown) => typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  if (
    !Array.isArray(row) && row && typeof row === "object" && /\$[A-Za-z_]/.test(fmt)
  ) {
    return fmt.replace(/\$([A-Za-z_][\w.]*)/g, (_m, path: string) => {
      let v: Any = row;
      for (const k of path.split(".")) v = v?.[k];
      return show(v);
    });
  }
  let i = 0;
  return fmt.replace(/%([sdipjo#%])/g, (m, c: string) => {
    if (c === "%") return "%";
    if (c === "#") return String(index);
    if (i >= args.length) return m;
    const v = args[i++];
    if (c === "d" || c === "i") return String(Math.trunc(Number(v)));
    return show(v);
  });
}

function eachImpl(table: unknown[], skip = false) {
  return (fmt: string, fn: Fn, timeout?: number) => {
    table.forEach((row, index) => {
      const args = Array.isArray(row) ? row : [row];
      testImpl(title(fmt, row, args, index), () => fn(...args), timeout, skip);
    });
  };
}

type TestFn = ((name: string, fn?: Fn, timeout?: number) => void) & Record<string, Any>;

function makeTest(): TestFn {
  const t = ((name: string, fn?: Fn, timeout?: number) => testImpl(name, fn, timeout)) as TestFn;
  t.skip = (name: string, fn?: Fn, timeout?: number) => testImpl(name, fn, timeout, true);
  t.only = (name: string, fn?: Fn, timeout?: number) => testImpl(name, fn, timeout, false, true);
  t.todo = (name: string) => testImpl(name, undefined, undefined, true);
  t.each = (table: unknown[]) => eachImpl(table);
  t.skip.each = (table: unknown[]) => eachImpl(table, true);
  t.concurrent = t;
  return t;
}

const describe = ((name: string, fn: () => unknown) => describeImpl(name, fn)) as Any;
describe.skip = (name: string, fn: () => unknown) => describeImpl(name, fn, true);
describe.only = describe;
describe.each = (table: unknown[]) => (fmt: string, fn: Fn) =>
  table.forEach((row, index) => {
    const args = Array.isArray(row) ? row : [row];
    describeImpl(title(fmt, row, args, index), () => fn(...args));
  });

const mocker = new ModuleMocker(globalThis as Any);
let clock: ReturnType<typeof FakeTimers.withGlobal>["install"] extends (...a: Any[]) => infer R
  ? R | undefined
  : never;

/** Jest's modern fake timers fake these by default. */
const FAKEABLE = [
  "Date",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
  "setImmediate",
  "clearImmediate",
  "queueMicrotask",
  "hrtime",
  "nextTick",
  "performance",
];

const jest = {
  fn: (impl?: Fn) => mocker.fn(impl),
  spyOn: (obj: Any, method: string, accessType?: "get" | "set") =>
    accessType
      ? mocker.spyOn(obj, method as never, accessType as never)
      : mocker.spyOn(obj, method),
  clearAllMocks: () => (mocker.clearAllMocks(), jest),
  resetAllMocks: () => (mocker.resetAllMocks(), jest),
  restoreAllMocks: () => (mocker.restoreAllMocks(), jest),
  useFakeTimers(opts: { doNotFake?: string[]; now?: number | Date } = {}) {
    clock?.uninstall();
    // Native promises and Deno's own I/O do not go through these; faking the microtask queue
    // and nextTick would stop the awaited HTTP calls, so they are left real (as Jest leaves
    // native promises).
    const skip = new Set([...(opts.doNotFake ?? []), "queueMicrotask", "nextTick", "hrtime"]);
    clock = FakeTimers.withGlobal(globalThis).install({
      toFake: FAKEABLE.filter((n) => !skip.has(n)) as Any,
      now: opts.now ?? Date.now(),
    });
    return jest;
  },
  useRealTimers() {
    clock?.uninstall();
    clock = undefined;
    return jest;
  },
  setSystemTime(now: number | Date) {
    if (!clock) throw new Error("jest.setSystemTime needs jest.useFakeTimers()");
    clock.setSystemTime(now);
  },
  advanceTimersByTime(ms: number) {
    clock?.tick(ms);
  },
  async advanceTimersByTimeAsync(ms: number) {
    await clock?.tickAsync(ms);
  },
  runAllTimers() {
    clock?.runAll();
  },
  doMock(): never {
    throw new Error("jest.doMock (module mocking) is not available outside Jest");
  },
  requireActual(): never {
    throw new Error("jest.requireActual (module registry) is not available outside Jest");
  },
};

const requirable = new Map<string, unknown>([["jsonwebtoken", jsonwebtoken]]);

/** Lets `require(name)` return a module the runner has imported (ES modules cannot be required). */
export function provide(name: string, module: unknown): void {
  requirable.set(name, module);
}

function requireShim(name: string): unknown {
  if (requirable.has(name)) return requirable.get(name);
  throw new Error(`require("${name}") is not available here`);
}

/** Installs the Jest globals, the file's module-level hooks going to `block`. */
function install(): void {
  const g = globalThis as Any;
  g.describe = describe;
  g.test = makeTest();
  g.it = g.test;
  g.beforeAll = (fn: Fn) => void here().beforeAll.push(fn);
  g.afterAll = (fn: Fn) => void here().afterAll.push(fn);
  g.beforeEach = (fn: Fn) => void here().beforeEach.push(fn);
  g.afterEach = (fn: Fn) => void here().afterEach.push(fn);
  g.expect = expect;
  g.jest = jest;
  g.global ??= globalThis;
  g.Buffer ??= Buffer;
  g.require ??= requireShim;
}

/** Runs a test file's module (`load` imports it) and returns the tests it declared. */
export async function collect(file: string, load: () => Promise<unknown>): Promise<TestCase[]> {
  install();
  root = newBlock(file);
  current = root;
  collected = [];
  try {
    await load();
  } finally {
    current = undefined;
  }
  const tests = collected;
  for (const t of tests) {
    for (let b: Block | undefined = t.block; b; b = b.parent) if (!t.skip) b.tests.push(t);
  }
  if (tests.some((t) => t.only)) { for (const t of tests) if (!t.only) t.skip = true; }
  return tests;
}

function ancestors(block: Block): Block[] {
  const out: Block[] = [];
  for (let b: Block | undefined = block; b; b = b.parent) out.unshift(b);
  return out;
}

/** A jest test function may take a `done` callback instead of returning a promise. */
function call(fn: Fn): Promise<unknown> {
  if (fn.length === 0) return Promise.resolve().then(() => fn());
  return new Promise((resolve, reject) => {
    const done = (err?: unknown) => err ? reject(err) : resolve(undefined);
    try {
      fn(done);
    } catch (e) {
      reject(e);
    }
  });
}

/** Bounds a hung test (Jest's per-test timeout), so one stuck call cannot stall the run. */
async function bounded(p: Promise<unknown>, ms: number, what: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      p,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: exceeded ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs one test with its hooks; throws the first error (a failing beforeAll of an enclosing
 * block fails every test of the block, as in Jest). `defaultTimeout` bounds each step.
 */
export async function runTest(t: TestCase, defaultTimeout: number): Promise<void> {
  const chain = ancestors(t.block);
  const limit = Math.max(t.timeout ?? 0, defaultTimeout);
  const errors: unknown[] = [];
  try {
    for (const b of chain) {
      if (!b.started) {
        b.started = true;
        for (const h of b.beforeAll) {
          try {
            await bounded(call(h), limit, "beforeAll");
          } catch (e) {
            b.beforeAllError = e;
            break;
          }
        }
      }
      if (b.beforeAllError) throw b.beforeAllError;
    }
    let failedEarly = false;
    for (const b of chain) {
      for (const h of b.beforeEach) {
        try {
          await bounded(call(h), limit, "beforeEach");
        } catch (e) {
          errors.push(e);
          failedEarly = true;
          break;
        }
      }
      if (failedEarly) break;
    }
    if (!failedEarly && t.fn) {
      try {
        await bounded(call(t.fn), limit, "test");
      } catch (e) {
        errors.push(e);
      }
    }
    for (const b of [...chain].reverse()) {
      for (const h of b.afterEach) {
        try {
          await bounded(call(h), limit, "afterEach");
        } catch (e) {
          errors.push(e);
        }
      }
    }
  } finally {
    // Fake timers a failing test left behind would stop every later test's timers.
    if (clock) jest.useRealTimers();
    for (const b of [...chain].reverse()) {
      b.done++;
      if (b.done === b.tests.length) {
        for (const h of b.afterAll) {
          try {
            await bounded(call(h), limit, "afterAll");
          } catch (e) {
            errors.push(e);
          }
        }
      }
    }
  }
  if (errors.length) throw errors[0];
}
