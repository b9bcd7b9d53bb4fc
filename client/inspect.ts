/**
 * The inspect hooks of the classes that hold secrets (`Client`,
 * `AccessToken`): `Deno.inspect`, Node's `util.inspect` and `console.log`
 * show a redacted view. They are put on a class's prototype with its first
 * instance, not when the module loads: a class with such hooks in its body
 * would be work at load time, which bundlers keep even when a program never
 * uses the class.
 * @module
 */

type Inspect = (value: unknown, options?: unknown) => string;

/**
 * Gives the instances of `klass` the two inspect hooks, showing the class's
 * `Symbol.toStringTag` and `view(instance)` (called by its constructor;
 * installs once).
 *
 * @returns true
 */
export function inspectAs<T extends object>(
  klass: { prototype: T },
  view: (self: T) => unknown,
): true {
  const deno = Symbol.for("Deno.customInspect");
  if (Object.hasOwn(klass.prototype, deno)) return true;
  const show = (self: T, inspect: Inspect, options: unknown) =>
    `${(self as { [Symbol.toStringTag]: string })[Symbol.toStringTag]} ${
      inspect(view(self), options)
    }`;
  Object.defineProperty(klass.prototype, deno, {
    value(this: T, inspect: Inspect, options: unknown) {
      return show(this, inspect, options);
    },
    configurable: true,
    writable: true,
  });
  Object.defineProperty(klass.prototype, Symbol.for("nodejs.util.inspect.custom"), {
    value(this: T, _depth: number, options: unknown, inspect: Inspect) {
      return show(this, inspect, options);
    },
    configurable: true,
    writable: true,
  });
  return true;
}
