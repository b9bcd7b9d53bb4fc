/**
 * Settings that would otherwise be ignored in silence: an `AUTHSVC_*` or
 * `GOTRUE_*` name that no setting has (a typo such as AUTHSVC_SMTP_HSOT), and
 * a setting's name written without its prefix (SMTP_HOST). GoTrue reads
 * without a prefix only the names this server also reads that way
 * (DATABASE_URL, PORT, API_EXTERNAL_URL, DB_NAMESPACE, REQUEST_ID_HEADER:
 * gotrue_aliases.ts), so any other bare name is warned about, naming the
 * variable to set instead. The known names are the ones `readConfig` read
 * (its SettingDoc list), so this list cannot drift from the reader.
 */
import { PREFIX, type SettingDoc } from "./reader.ts";
import { TO_UNPREFIXED, UNPREFIXED } from "./gotrue_aliases.ts";

const GOTRUE = "GOTRUE_";

/** Read outside the typed reader (jwt.ts reads it to say it is deprecated). */
const READ_ELSEWHERE = ["AUTHSVC_JWT_ADMIN_GROUP_NAME"];

/** The name without AUTHSVC_ or GOTRUE_. */
function base(name: string): string {
  if (name.startsWith(PREFIX)) return name.slice(PREFIX.length);
  if (name.startsWith(GOTRUE)) return name.slice(GOTRUE.length);
  return name;
}

/** Edit distance with adjacent transpositions (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** Every variable name the reader knows, ours and GoTrue's. */
export function knownNames(docs: readonly SettingDoc[]): Set<string> {
  const ours = [
    ...docs.flatMap((d) => d.name.split(" / ").map((n) => n.trim())),
    ...READ_ELSEWHERE,
  ];
  const out = new Set(ours);
  for (const n of ours) if (n.startsWith(PREFIX)) out.add(GOTRUE + base(n));
  // GoTrue's names read for ours beyond GOTRUE_<NAME> (gotrue_aliases.ts).
  for (const n of [...Object.keys(UNPREFIXED), ...Object.keys(TO_UNPREFIXED)]) out.add(n);
  return out;
}

/** The known name nearest to `name` (compared without prefixes), when one is near enough. */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  const b = base(name);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    if (k.startsWith(GOTRUE)) continue; // suggest our names, which the docs list
    const d = editDistance(b, base(k));
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  // A typo is an edit or two; a name further off is another setting, not a misspelling.
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(b.length / 8))
    ? best
    : undefined;
}

/**
 * One warning per variable of `env` that looks like a setting but is not read:
 * unknown AUTHSVC_/GOTRUE_ names (with the nearest known name) and settings'
 * names without their prefix. Each names the variable to set.
 */
export function settingNameWarnings(
  env: Record<string, string | undefined>,
  docs: readonly SettingDoc[],
): string[] {
  const known = knownNames(docs);
  const out: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (known.has(name)) continue;
    if (name.startsWith(PREFIX) || name.startsWith(GOTRUE)) {
      const near = nearestName(name, known);
      if (near) out.push(`${name} is not a setting and is ignored: did you mean ${near}?`);
      else if (name.startsWith(GOTRUE)) {
        out.push(
          `${name} is not read by this server and is ignored: it has no such setting (docs/gotrue_names.md)`,
        );
      } else {
        out.push(`${name} is not a setting and is ignored (docs/settings.md lists every setting)`);
      }
    } else if (
      known.has(PREFIX + name) && !isSet(env[PREFIX + name]) && !isSet(env[GOTRUE + name])
    ) {
      out.push(`${name} is ignored: settings carry a prefix, set ${PREFIX}${name}`);
    }
  }
  return out;
}

function isSet(v: string | undefined): boolean {
  return v !== undefined && v.trim() !== "";
}
