/**
 * GoTrue's setting names as aliases, so an existing GoTrue `.env` works
 * unchanged: every `GOTRUE_<NAME>` is read as `AUTHSVC_<NAME>`, and the
 * unprefixed names GoTrue also reads (`API_EXTERNAL_URL`, `DB_NAMESPACE`,
 * `REQUEST_ID_HEADER`) as theirs; `GOTRUE_LOG_LEVEL` is `LOG_LEVEL`. When both
 * names are set, ours wins. Each alias used is reported, for the start-up log.
 *
 * Between a file and the environment, the environment wins whatever name
 * either uses (`settingOf`, mod.ts `readEnvironment`): `.env.example`'s
 * `AUTHSVC_MAILER_AUTOCONFIRM=false` never overrides the operator's
 * `GOTRUE_MAILER_AUTOCONFIRM=true`.
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

/** Names the config reader reads as other names of one setting (the `aliases` of db.ts and api.ts). */
const SAME_SETTING: Record<string, string> = {
  AUTHSVC_API_PORT: "PORT",
  AUTHSVC_DB_DATABASE_URL: "DATABASE_URL",
};

/**
 * The setting a variable sets, whichever of its names it is given under:
 * `GOTRUE_JWT_EXP` and `AUTHSVC_JWT_EXP` both set `AUTHSVC_JWT_EXP`,
 * `GOTRUE_API_PORT` sets `PORT`. Other names are their own setting.
 */
export function settingOf(name: string): string {
  let n = name;
  if (TO_UNPREFIXED[n]) n = TO_UNPREFIXED[n];
  else if (UNPREFIXED[n]) n = UNPREFIXED[n];
  else if (n.startsWith("GOTRUE_")) n = `AUTHSVC_${n.slice("GOTRUE_".length)}`;
  return SAME_SETTING[n] ?? n;
}

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
