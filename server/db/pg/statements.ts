/**
 * The statements a connection keeps prepared: every parameterised query is a named prepared
 * statement, parsed once per connection; the cache is bounded and the least recently prepared
 * is closed on the server. For transaction poolers (PgBouncer, Supavisor), the unnamed
 * statement, parsed on every execution, instead.
 */
import type { Parser } from "./inbox.ts";
import { paramType, serialize } from "./types.ts";
import * as wire from "./wire.ts";

/** Statements kept prepared per connection. */
export const STATEMENT_CACHE_SIZE = 500;

/** A prepared statement (or, named "", an unnamed one for one execution). */
export interface Statement {
  name: string;
  key: string;
  /** Column names and parsers, once the server described the statement. */
  names: string[] | null;
  parsers: Parser[];
  /** Result format codes once described (1: binary, types.ts BINARY_RESULTS), or null: all text. */
  formats: Uint8Array | null;
  /** The Parse of this statement failed: the error every query of it gets. */
  failed: unknown;
}

/** One execution: its statement, whether it carries the Parse, the result formats it asks for. */
export interface Execution {
  statement: Statement;
  parses: boolean;
  formats: Uint8Array | null;
}

/** One connection's statements. */
export class Statements {
  readonly #cache = new Map<string, Statement>();
  readonly #unnamed: boolean;
  #seq = 0;

  /** `unnamed`: every execution parses the unnamed statement (prepared_statements=unnamed). */
  constructor(unnamed: boolean) {
    this.#unnamed = unnamed;
  }

  /**
   * Writes one execution of `text` with `params` to `w` (Parse and Describe first when the
   * statement is new, then Bind, Execute, Sync). A value that cannot be sent throws before any
   * byte is written. When the statement's Parse failed, nothing is written and the execution
   * returned does not parse a statement whose `failed` is set.
   */
  write(w: wire.Writer, text: string, params: readonly unknown[]): Execution {
    const values = new Array<string | null>(params.length);
    let typed = false;
    const types = new Array<number>(params.length);
    for (let i = 0; i < params.length; i++) {
      values[i] = serialize(params[i]);
      types[i] = paramType(params[i]);
      if (types[i] !== 0) typed = true;
    }
    const key = typed ? `${text}\u0000${types.join(",")}` : text;
    if (this.#unnamed) {
      // Parse, Bind, Describe portal, Execute, Sync (libpq's PQexecParams): nothing outlives
      // the implicit transaction; results in text.
      const st: Statement = {
        name: "",
        key,
        names: null,
        parsers: [],
        formats: null,
        failed: null,
      };
      wire.parse(w, "", text, types);
      wire.bind(w, "", values, null);
      wire.describe(w, "P", "");
      wire.execute(w);
      wire.sync(w);
      return { statement: st, parses: true, formats: null };
    }
    let st = this.#cache.get(key);
    let parses = false;
    if (st === undefined) {
      st = { name: `s${++this.#seq}`, key, names: null, parsers: [], formats: null, failed: null };
      if (this.#cache.size >= STATEMENT_CACHE_SIZE) {
        const oldest = this.#cache.values().next().value!;
        this.#cache.delete(oldest.key);
        wire.closeStatement(w, oldest.name);
      }
      this.#cache.set(key, st);
      wire.parse(w, st.name, text, types);
      wire.describe(w, "S", st.name);
      parses = true;
    } else if (st.failed !== null) {
      return { statement: st, parses: false, formats: null };
    }
    // The first execution, sent with the Parse, asks for text: the column types are not known yet.
    const formats = st.names !== null ? st.formats : null;
    wire.bind(w, st.name, values, formats);
    wire.execute(w);
    wire.sync(w);
    return { statement: st, parses, formats };
  }

  /** The Parse of `st` failed: it does not exist on the server. */
  failed(st: Statement, err: unknown): void {
    st.failed = err;
    this.#cache.delete(st.key);
  }

  /** Forgets the statements of `text`, closing them on the server unless `w` is null. */
  forget(text: string, w: wire.Writer | null): void {
    for (const [key, st] of this.#cache) {
      if (key === text || key.startsWith(`${text}\u0000`)) {
        this.#cache.delete(key);
        if (w !== null) wire.closeStatement(w, st.name);
      }
    }
  }
}
