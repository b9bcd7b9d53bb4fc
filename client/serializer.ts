/**
 * Serializer for `SnakyHash` classes (spec 2.4 rule 6): `dump` to JSON text and
 * `load` back into an instance, with hooks for leaf values and whole hashes.
 * @module
 */
import { SnakyHash } from "./snaky_hash.ts";

/** A hook run on every leaf value (not hashes or arrays), in order. */
export type ValueHook = (value: unknown) => unknown;
/** A hook run on every hash (the top one and each nested one), in order. */
export type HashHook = (hash: Record<string, unknown>) => Record<string, unknown>;

/** The statics `Serializer.extend` adds to a `SnakyHash` class. */
export interface SerializerStatics<T extends SnakyHash = SnakyHash> {
  /** Serializes a hash to JSON text, running the dump hooks. */
  dump(hash: SnakyHash | Record<string, unknown>): string;
  /** Restores an instance of the class from JSON text, running the load hooks. */
  load(text: string): T;
  /** Hooks for leaf values while dumping. */
  dumpValueHooks: ValueHook[];
  /** Hooks for leaf values while loading. */
  loadValueHooks: ValueHook[];
  /** Hooks for whole hashes while dumping. */
  dumpHashHooks: HashHook[];
  /** Hooks for whole hashes while loading. */
  loadHashHooks: HashHook[];
}

/** A `SnakyHash` class after `Serializer.extend`. */
export type SerializableSnakyHashClass<K extends typeof SnakyHash = typeof SnakyHash> =
  & K
  & SerializerStatics<InstanceType<K>>;

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

/**
 * Adds `dump`, `load` and the four hook lists to a `SnakyHash` class. Extend
 * `SnakyHash` itself for global use or a subclass to keep its hooks apart.
 *
 * @example
 * ```ts
 * class Saved extends SnakyHash {}
 * Serializer.extend(Saved);
 * Saved.dumpValueHooks.push((v) => (typeof v === "string" ? v.toUpperCase() : v));
 * const text = Saved.dump(new Saved({ tokenType: "bearer" })); // '{"token_type":"BEARER"}'
 * const back = Saved.load(text);                                 // an instance of Saved
 * ```
 */
export class Serializer {
  /**
   * Adds the serializer statics to `klass` (each class gets its own hook lists).
   *
   * @param klass `SnakyHash` or a subclass
   * @throws {TypeError} when `klass` is not `SnakyHash` or a subclass of it
   */
  static extend<K extends typeof SnakyHash>(
    klass: K,
  ): asserts klass is K & SerializerStatics<InstanceType<K>> {
    if (
      typeof klass !== "function" || !(klass === SnakyHash || klass.prototype instanceof SnakyHash)
    ) {
      throw new TypeError(`Serializer.extend: "klass" must be SnakyHash or a subclass of it`);
    }
    const target = klass as unknown as SerializerStatics<InstanceType<K>>;
    if (Object.hasOwn(klass, "dumpValueHooks")) return;
    const statics: SerializerStatics<InstanceType<K>> = {
      dumpValueHooks: [],
      loadValueHooks: [],
      dumpHashHooks: [],
      loadHashHooks: [],
      dump(hash) {
        return JSON.stringify(walk(hash, target.dumpValueHooks, target.dumpHashHooks));
      },
      load(text) {
        if (typeof text !== "string") {
          throw new TypeError(`load: "text" must be a string, got ${typeof text}`);
        }
        const parsed = JSON.parse(text);
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
          throw new TypeError(`load: "text" must hold a JSON object`);
        }
        const data = walk(parsed, target.loadValueHooks, target.loadHashHooks);
        return new klass(data as Record<string, unknown>) as InstanceType<K>;
      },
    };
    for (const [name, value] of Object.entries(statics)) {
      Object.defineProperty(klass, name, { value, writable: true, configurable: true });
    }
  }
}
