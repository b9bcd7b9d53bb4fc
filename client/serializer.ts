/**
 * Serializer for `SnakyHash` classes (the gem's `SnakyHash::Serializer`): `dump` to JSON text and
 * `load` back into an instance, with hooks for leaf values and whole hashes.
 * @module
 */
import { SnakyHash } from "./snaky_hash.ts";

/**
 * A hook run on every leaf value (not hashes or arrays), in order.
 *
 * @example
 * ```ts
 * import { Serializer, SnakyHash, type ValueHook } from "@authsvc/oauth2";
 * class Stored extends SnakyHash {}
 * Serializer.extend(Stored);
 * const hideEmail: ValueHook = (v) => (typeof v === "string" && v.includes("@") ? "[email]" : v);
 * Stored.dumpValueHooks.push(hideEmail);
 * console.log(Stored.dump(new Stored({ email: "a@b.c" }))); // {"email":"[email]"}
 * ```
 */
export type ValueHook = (value: unknown) => unknown;
/**
 * A hook run on every hash (the top one and each nested one), in order.
 *
 * @example
 * ```ts
 * import { type HashHook, Serializer, SnakyHash } from "@authsvc/oauth2";
 * class Stored extends SnakyHash {}
 * Serializer.extend(Stored);
 * const version: HashHook = (h) => ({ ...h, v: 1 });
 * Stored.dumpHashHooks.push(version);
 * console.log(Stored.dump(new Stored({ a: 1 }))); // {"a":1,"v":1}
 * ```
 */
export type HashHook = (hash: Record<string, unknown>) => Record<string, unknown>;

function walk(value: unknown, valueHooks: ValueHook[], hashHooks: HashHook[]): unknown {
  if (Array.isArray(value)) return value.map((v) => walk(v, valueHooks, hashHooks));
  if (value !== null && typeof value === "object") {
    let hash = value instanceof SnakyHash
      ? value.toObject()
      : { ...(value as Record<string, unknown>) };
    for (const hook of hashHooks) hash = hook(hash);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(hash)) out[k] = walk(v, valueHooks, hashHooks);
    return out;
  }
  let v = value;
  for (const hook of valueHooks) v = hook(v);
  return v;
}

function dump(this: typeof SnakyHash, hash: SnakyHash | Record<string, unknown>): string {
  return JSON.stringify(walk(hash, this.dumpValueHooks, this.dumpHashHooks));
}

function load<T extends typeof SnakyHash>(this: T, text: string): InstanceType<T> {
  if (typeof text !== "string") {
    throw new TypeError(`load: "text" must be a string, got ${typeof text}`);
  }
  const parsed = JSON.parse(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new TypeError(`load: "text" must hold a JSON object`);
  }
  const data = walk(parsed, this.loadValueHooks, this.loadHashHooks);
  return new this(data as Record<string, unknown>) as InstanceType<T>;
}

/**
 * Adds `dump`, `load` and the four hook lists (`dumpValueHooks`,
 * `loadValueHooks`, `dumpHashHooks`, `loadHashHooks`) to a `SnakyHash` class.
 * Extend `SnakyHash` itself for global use (subclasses inherit it) or a
 * subclass to give it hook lists of its own.
 *
 * @example
 * ```ts
 * import { Serializer, SnakyHash } from "@authsvc/oauth2";
 *
 * class Saved extends SnakyHash {}
 * Serializer.extend(Saved);
 * Saved.dumpValueHooks.push((v) => (typeof v === "string" ? v.toUpperCase() : v));
 * const text = Saved.dump(new Saved({ tokenType: "bearer" })); // '{"token_type":"BEARER"}'
 * const back = Saved.load(text); // an instance of Saved
 * console.log(text, back.token_type);
 * ```
 */
export class Serializer {
  /**
   * Adds the serializer statics to `klass` (its own, empty hook lists).
   * Extending a class twice keeps its hooks.
   *
   * @param klass `SnakyHash` or a subclass
   * @throws {TypeError} when `klass` is not `SnakyHash` or a subclass of it
   */
  static extend(klass: typeof SnakyHash): void {
    if (
      typeof klass !== "function" ||
      !(klass === SnakyHash || klass.prototype instanceof SnakyHash)
    ) {
      throw new TypeError(`Serializer.extend: "klass" must be SnakyHash or a subclass of it`);
    }
    if (Object.hasOwn(klass, "dumpValueHooks")) return;
    const statics = {
      dumpValueHooks: [],
      loadValueHooks: [],
      dumpHashHooks: [],
      loadHashHooks: [],
      dump,
      load,
    };
    for (const [name, value] of Object.entries(statics)) {
      Object.defineProperty(klass, name, { value, writable: true, configurable: true });
    }
  }
}
