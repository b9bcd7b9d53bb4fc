/**
 * GoTrue's setting names as aliases, so an existing GoTrue `.env` works
 * unchanged: every `GOTRUE_<NAME>` is read as `AUTHSVC_<NAME>`, and the
 * unprefixed names GoTrue also reads (`API_EXTERNAL_URL`, `DB_NAMESPACE`,
 * `REQUEST_ID_HEADER`) as theirs; `GOTRUE_LOG_LEVEL` is `LOG_LEVEL`. When both
 * names are set, ours wins. Each alias used is reported, for the start-up log.
 */

/** GoTrue names read without a prefix, mapped to ours. */
export const UNPREFIXED: Record<string, string> = {
  API_EXTERNAL_URL: "AUTHSVC_API_EXTERNAL_URL",
  DB_NAMESPACE: "AUTHSVC_DB_NAMESPACE",
  REQUEST_ID_HEADER: "AUTHSVC_REQUEST_ID_HEADER",
};

/** GoTrue names whose counterpart of ours has no prefix. */
export const TO_UNPREFIXED: Record<string, string> = {
  GOTRUE_LOG_LEVEL: "LOG_LEVEL",
  GOTRUE_PORT: "PORT",
  GOTRUE_DATABASE_URL: "DATABASE_URL",
};

function isSet(v: string | undefined): v is string {
  return v !== undefined && v.trim() !== "";
}

/**
 * The environment with GoTrue's names copied to ours where ours are unset,
 * one line per alias used (or overridden), and which alias gave each name.
 */
export function applyGoTrueAliases(
  env: Record<string, string | undefined>,
): { env: Record<string, string | undefined>; notes: string[]; from: Record<string, string> } {
  const out = { ...env };
  const notes: string[] = [];
  const from: Record<string, string> = {};
  const take = (alias: string, to: string) => {
    const v = env[alias];
    if (!isSet(v)) return;
    if (isSet(env[to])) {
      if (env[to]!.trim() !== v.trim()) notes.push(`${to} is set, so GoTrue's ${alias} is ignored`);
      return;
    }
    if (isSet(out[to])) return; // an earlier alias already gave it
    out[to] = v;
    from[to] = alias;
    notes.push(`${to} read from GoTrue's ${alias}`);
  };
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith("GOTRUE_")) continue;
    take(name, TO_UNPREFIXED[name] ?? `AUTHSVC_${name.slice("GOTRUE_".length)}`);
  }
  for (const [from, to] of Object.entries(UNPREFIXED)) take(from, to);
  return { env: out, notes, from };
}
