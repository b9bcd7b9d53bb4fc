/**
 * Classes of input whose findings the fuzz does not count as failures
 * because the fix is not in this branch yet. Every entry names the defect it
 * waits for; excluded requests are still sent and counted
 * (report.excluded), only their findings are not failures.
 * FUZZ_NO_EXCLUSIONS=1 ignores the whole list (to see whether an entry can
 * go). Keep it empty when you can.
 */
import type { FuzzRequest } from "./gen.ts";

/** One excluded class: a name, the defect (issue and reproducing request), and what it covers. */
export interface Exclusion {
  name: string;
  defect: string;
  /** Generated requests of the class. */
  request?(req: FuzzRequest): boolean;
  /** Only the "no row changed by a refused request" check is skipped (the others still hold). */
  writesOnly?: boolean;
  /** Conflicting-pair kinds (harness.ts `conflicts`) of the class. */
  pairs?: string[];
  /** Integrity checks (harness.ts `integrity`) the class may break. */
  integrity?: string[];
}

/*
 * Empty. Until the merge of wt-25a (issue 25's fixes) lone surrogates, NUL,
 * control and format characters, chunked bodies on GET/HEAD/DELETE, the
 * /admin/audit Link header and the unique races were listed here; until
 * wt-safety, `PUT /user` with a new phone and a taken e-mail (the SMS went out
 * before the e-mail step refused; tests/fuzz/found_test.ts).
 */
export const EXCLUDED: Exclusion[] = [];

const enabled = Deno.env.get("FUZZ_NO_EXCLUSIONS") !== "1";

/** The name of the exclusion `req` falls under for every check, or undefined. */
export function excludedBy(req: FuzzRequest): string | undefined {
  if (!enabled) return undefined;
  return EXCLUDED.find((e) => !e.writesOnly && e.request?.(req))?.name;
}

/** The name of the exclusion `req` falls under for the write-on-refusal check, or undefined. */
export function excludedWrites(req: FuzzRequest): string | undefined {
  if (!enabled) return undefined;
  return EXCLUDED.find((e) => e.request?.(req))?.name;
}

/** The name of the exclusion covering a conflicting-pair kind, or undefined. */
export function excludedPair(kind: string): string | undefined {
  if (!enabled) return undefined;
  return EXCLUDED.find((e) => e.pairs?.includes(kind))?.name;
}

/** The name of the exclusion covering an integrity check, or undefined. */
export function excludedIntegrity(check: string): string | undefined {
  if (!enabled) return undefined;
  return EXCLUDED.find((e) => e.integrity?.includes(check))?.name;
}
