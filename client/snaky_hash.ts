/**
 * `SnakyHash`: the parsed body of a response, keys in snake_case, values
 * readable as properties or with `get()` in either spelling. Keys that collide
 * with a member (`get`, `has`, `keys`, `method`-like names of subclasses ...)
 * never shadow it: their values stay reachable with `get()`.
 * @module
 */

/**
 * Converts a key to snake_case: `expiresIn` → `expires_in`,
 * `IDToken` → `id_token`, `token-type` → `token_type`.
 *
 * @example
 * ```ts
 * import { snakeCase } from "@authsvc/oauth2";
 * console.log(snakeCase("expiresIn")); // "expires_in"
 * console.log(snakeCase("IDToken")); // "id_token"
 * ```
 */
export function snakeCase(key: string): string {
  if (isSnake(key)) return key;
  return key
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/([a-z\d])([A-Z])/g, "$1_$2")
    .replace(/-/g, "_")
    .toLowerCase();
}

/** Whether `key` is only `a-z 0-9 _` (a loop: cheaper than a regex on short keys). */
function isSnake(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95)) return false;
  }
  return true;
}
const RESERVED = new Set(["__proto__", "constructor", "prototype"]);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A string-keyed hash whose keys are stored in snake_case.
 *
 * @example
 * ```ts
 * const h = new SnakyHash({ accessToken: "abc", expiresIn: 3600 });
 * h.access_token;      // "abc"
 * h.get("expiresIn");  // 3600
 * h.toObject();        // { access_token: "abc", expires_in: 3600 }
 * ```
 */
export class SnakyHash {
  /**
   * Serializes a hash to JSON text, running the dump hooks. Present after
   * `Serializer.extend(SnakyHash)` or `Serializer.extend(ThisClass)`.
   */
  declare static dump: (
    this: typeof SnakyHash,
    hash: SnakyHash | Record<string, unknown>,
  ) => string;
  /**
   * Restores an instance of the class from JSON text, running the load hooks.
   * Present after `Serializer.extend`.
   */
  declare static load: <T extends typeof SnakyHash>(this: T, text: string) => InstanceType<T>;
  /** Hooks for leaf values while dumping (after `Serializer.extend`). */
  declare static dumpValueHooks: Array<(value: unknown) => unknown>;
  /** Hooks for leaf values while loading (after `Serializer.extend`). */
  declare static loadValueHooks: Array<(value: unknown) => unknown>;
  /** Hooks for whole hashes while dumping (after `Serializer.extend`). */
  declare static dumpHashHooks: Array<(hash: Record<string, unknown>) => Record<string, unknown>>;
  /** Hooks for whole hashes while loading (after `Serializer.extend`). */
  declare static loadHashHooks: Array<(hash: Record<string, unknown>) => Record<string, unknown>>;

  /** Values by snake_case key. */
  #data: Map<string, unknown> = new Map();

  /** Allows `h.some_key` property reads of stored values. */
  [key: string]: unknown;

  /**
   * Creates an instance.
   *
   * @param init a plain object, a `SnakyHash`, or key/value pairs; nested plain
   *   objects become instances of the same class
   */
  constructor(init?: Record<string, unknown> | Iterable<[string, unknown]> | null) {
    if (init === undefined || init === null) return;
    if (typeof init !== "object") {
      throw new TypeError(`SnakyHash: "init" must be an object, got ${typeof init}`);
    }
    const entries = init instanceof SnakyHash
      ? init.entries()
      : Symbol.iterator in init && !isPlainObject(init)
      ? (init as Iterable<[string, unknown]>)
      : Object.entries(init as Record<string, unknown>);
    for (const [k, v] of entries) this.set(k, v);
  }

  /** Stores `value` under the snake_case form of `key`; returns this hash. */
  set(key: string, value: unknown): this {
    const k = snakeCase(String(key));
    const converted = this.#convert(value);
    this.#data.set(k, converted);
    // A plain data property (fast to create and read); keys that name a member
    // of the class (get, keys, size, a subclass's methods ...) stay in #data only.
    if (Object.hasOwn(this, k) || (!RESERVED.has(k) && !(k in this))) this[k] = converted;
    return this;
  }

  /** The value under `key`, given in snake_case or camelCase; `undefined` when absent. */
  get(key: string): unknown {
    let k = String(key);
    if (!this.#data.has(k)) k = snakeCase(k);
    return Object.hasOwn(this, k) ? this[k] : this.#data.get(k);
  }

  /** Whether `key` (either spelling) is present. */
  has(key: string): boolean {
    return this.#data.has(String(key)) || this.#data.has(snakeCase(String(key)));
  }

  /** Removes `key` (either spelling); returns whether it was present. */
  delete(key: string): boolean {
    const k = this.#data.has(String(key)) ? String(key) : snakeCase(String(key));
    if (!this.#data.delete(k)) return false;
    if (Object.hasOwn(this, k)) delete this[k];
    return true;
  }

  /** The snake_case keys, in insertion order. */
  keys(): string[] {
    return [...this.#data.keys()];
  }

  /** The key/value pairs, in insertion order. */
  entries(): [string, unknown][] {
    return this.keys().map((k) => [k, this.get(k)]);
  }

  /** Number of keys. */
  get size(): number {
    return this.#data.size;
  }

  /** A deep plain-object copy (nested hashes become plain objects). */
  toObject(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const k of this.#data.keys()) {
      out[k] = plain(Object.hasOwn(this, k) ? this[k] : this.#data.get(k));
    }
    return out;
  }

  /** Used by `JSON.stringify`. */
  toJSON(): Record<string, unknown> {
    return this.toObject();
  }

  #convert(value: unknown): unknown {
    if (value instanceof SnakyHash) return value;
    if (isPlainObject(value)) {
      return new (this.constructor as new (init: Record<string, unknown>) => SnakyHash)(value);
    }
    if (Array.isArray(value)) return value.map((v) => this.#convert(v));
    return value;
  }
}

function plain(value: unknown): unknown {
  if (value instanceof SnakyHash) return value.toObject();
  if (Array.isArray(value)) return value.map(plain);
  return value;
}
