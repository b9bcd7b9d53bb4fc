/**
 * The typed reader behind `server/config/`: every read records the setting
 * (its section, variable name, type, default and meaning) so docs/settings.md
 * (scripts/settings_doc.ts) is generated from the same code that parses it,
 * and every problem is collected so a bad start prints one line per variable.
 */
import { parseDurationMs } from "../util/duration.ts";

/** One documented setting. */
export interface SettingDoc {
  /** Title of the section it is read in (docs/settings.md's heading). */
  section: string;
  name: string;
  type: string;
  default: string;
  required: boolean;
  doc: string;
}

/** Options of one read. */
export interface ReadOpts<T> {
  /** Read the name as written, without the `AUTHSVC_` prefix. */
  noPrefix?: boolean;
  /** Other names tried (first set wins), each as written (full names). */
  aliases?: string[];
  default?: T;
  required?: boolean;
  doc?: string;
}

/** A request rate: `count` events per `windowSec` seconds. */
export interface Rate {
  count: number;
  windowSec: number;
}

export const PREFIX = "AUTHSVC_";

/** A section of the settings: one file of `server/config/`, one heading of docs/settings.md. */
export interface SectionDoc {
  title: string;
  /** One sentence on what the section's settings govern and where that is described. */
  about: string;
}

/** Collects problems and documentation while reading an environment map. */
export class ConfigReader {
  readonly problems: string[] = [];
  readonly deprecations: string[] = [];
  readonly docs: SettingDoc[] = [];
  readonly sections: SectionDoc[] = [];
  #section = "";

  constructor(readonly env: Record<string, string | undefined>) {}

  /** Runs `read` with every setting it reads documented under the section `doc`. */
  section<T>(doc: SectionDoc, read: () => T): T {
    this.sections.push(doc);
    const outer = this.#section;
    this.#section = doc.title;
    try {
      return read();
    } finally {
      this.#section = outer;
    }
  }

  /** The full variable name for a spec name. */
  name(specName: string, noPrefix = false): string {
    return noPrefix ? specName : PREFIX + specName;
  }

  #raw<T>(
    specName: string,
    type: string,
    opts: ReadOpts<T>,
    show = (v: T) => String(v),
  ): [string, string | undefined] {
    const full = this.name(specName, opts.noPrefix);
    const names = [full, ...(opts.aliases ?? [])];
    this.docs.push({
      section: this.#section,
      name: names.join(" / "),
      type,
      default: opts.default === undefined ? "" : show(opts.default),
      required: !!opts.required,
      doc: opts.doc ?? "",
    });
    for (const n of names) {
      const v = this.env[n];
      if (v !== undefined && v.trim() !== "") return [n, v.trim()];
    }
    if (opts.required) this.problems.push(`${full}: required, expected ${type}`);
    return [full, undefined];
  }

  string(specName: string, opts: ReadOpts<string> = {}): string {
    const [, v] = this.#raw(specName, "string", opts);
    return v ?? opts.default ?? "";
  }

  optString(specName: string, opts: ReadOpts<string> = {}): string | undefined {
    const [, v] = this.#raw(specName, "string", opts);
    return v ?? opts.default;
  }

  url(specName: string, opts: ReadOpts<string> = {}): string {
    const [n, v] = this.#raw(specName, "URL", opts);
    if (v === undefined) return opts.default ?? "";
    try {
      const u = new URL(v);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
      // A fragment is kept as written: a hash-routed SITE_URL ("https://app/#/") keeps its route.
      return v.includes("#") ? v : v.replace(/\/+$/, "");
    } catch {
      this.problems.push(`${n}: expected an http(s) URL, got "${v}"`);
      return "";
    }
  }

  bool(specName: string, opts: ReadOpts<boolean> = {}): boolean {
    const [n, v] = this.#raw(specName, "bool", { default: false, ...opts });
    if (v === undefined) return opts.default ?? false;
    const s = v.toLowerCase();
    if (["true", "1", "t", "yes", "y", "on"].includes(s)) return true;
    if (["false", "0", "f", "no", "n", "off"].includes(s)) return false;
    this.problems.push(`${n}: expected true or false, got "${v}"`);
    return opts.default ?? false;
  }

  int(specName: string, opts: ReadOpts<number> & { min?: number; max?: number } = {}): number {
    const [n, v] = this.#raw(specName, "integer", opts);
    if (v === undefined) return opts.default ?? 0;
    if (!/^-?\d+$/.test(v)) {
      this.problems.push(`${n}: expected an integer, got "${v}"`);
      return opts.default ?? 0;
    }
    const x = Number(v);
    if (opts.min !== undefined && x < opts.min) {
      this.problems.push(`${n}: expected at least ${opts.min}, got ${x}`);
    }
    if (opts.max !== undefined && x > opts.max) {
      this.problems.push(`${n}: expected at most ${opts.max}, got ${x}`);
    }
    return x;
  }

  /** A duration in seconds: a bare number of seconds or a Go duration ("10s", "1m30s"). */
  seconds(specName: string, opts: ReadOpts<number> = {}): number {
    const [n, v] = this.#raw(specName, "seconds or duration", opts);
    if (v === undefined) return opts.default ?? 0;
    const ms = parseDurationMs(v);
    if (ms === null || ms < 0) {
      this.problems.push(`${n}: expected seconds or a duration like 10s, got "${v}"`);
      return opts.default ?? 0;
    }
    return ms / 1000;
  }

  list(specName: string, opts: ReadOpts<string[]> = {}): string[] {
    const [, v] = this.#raw(specName, "comma-separated list", opts, (d) => d.join(","));
    if (v === undefined) return opts.default ?? [];
    return v.split(",").map((s) => s.trim()).filter((s) => s !== "");
  }

  oneOf<T extends string>(specName: string, choices: readonly T[], opts: ReadOpts<T> = {}): T {
    const [n, v] = this.#raw(specName, `one of ${choices.join(", ")}`, opts);
    if (v === undefined) return opts.default as T;
    const hit = choices.find((c) => c.toLowerCase() === v.toLowerCase());
    if (!hit) {
      this.problems.push(`${n}: expected one of ${choices.join(", ")}, got "${v}"`);
      return opts.default as T;
    }
    return hit;
  }

  /** A rate: "N" (per the default window) or "N/duration" such as "30/1h". */
  rate(specName: string, defaultRate: Rate, opts: ReadOpts<Rate> = {}): Rate {
    const [n, v] = this.#raw(
      specName,
      "count or count/duration",
      { ...opts, default: defaultRate },
      (r) => `${r.count}/${r.windowSec}s`,
    );
    if (v === undefined) return defaultRate;
    const m = /^(\d+(?:\.\d+)?)(?:\/(.+))?$/.exec(v);
    const win = m?.[2] === undefined ? defaultRate.windowSec * 1000 : parseDurationMs(m[2]);
    if (!m || win === null || win <= 0) {
      this.problems.push(`${n}: expected a count like 30 or 30/1h, got "${v}"`);
      return defaultRate;
    }
    return { count: Math.floor(Number(m[1])), windowSec: win / 1000 };
  }

  json<T>(
    specName: string,
    check: (v: unknown) => string | null,
    opts: ReadOpts<T> = {},
  ): T | undefined {
    const [n, v] = this.#raw(specName, "JSON", opts, (d) => JSON.stringify(d));
    if (v === undefined) return opts.default;
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      this.problems.push(`${n}: expected JSON, got malformed text`);
      return opts.default;
    }
    const why = check(parsed);
    if (why) {
      this.problems.push(`${n}: ${why}`);
      return opts.default;
    }
    return parsed as T;
  }

  /** Accepts an inherited setting that does nothing here, and notes it as deprecated. */
  deprecated(specName: string, why: string): void {
    const full = this.name(specName);
    this.docs.push({
      section: this.#section,
      name: full,
      type: "deprecated",
      default: "",
      required: false,
      doc: why,
    });
    const v = this.env[full];
    if (v !== undefined && v !== "") {
      this.deprecations.push(`${full} is deprecated and ignored: ${why}`);
    }
  }

  /** Records a cross-field problem. */
  problem(line: string): void {
    this.problems.push(line);
  }
}
