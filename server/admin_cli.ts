/**
 * `admin`: what the first operator needs before anyone can sign in to the
 * console or call the admin API (docs/console.md, "The first operator").
 *
 * - `create-user` and `set-role` are requests to the admin API
 *   (`POST /admin/users`, `PUT /admin/users/{id}`) with a short-lived
 *   service_role token signed here, so the API's checks and audit entries
 *   apply unchanged. They go to the running server when its /health answers
 *   (the embedded database serves one process at a time), else to a server
 *   built in this process on the same settings.
 * - `token` signs an admin token with the server's key and prints it; it
 *   needs no database.
 */
import type { Config } from "./config/mod.ts";
import { createApp } from "./app.ts";
import type { GeneratedSecret } from "./jwt_secret.ts";
import { JwtService } from "./auth/jwt.ts";
import type { Logger } from "./observe/log.ts";
import { healthUrl } from "./healthcheck.ts";
import { parseDurationMs } from "./util/duration.ts";
import { StartError } from "./startup.ts";

export const ADMIN_HELP = `Usage: deno task start -- admin <command> [options] [--env-file PATH]
       (a compiled binary: authsvc admin <command> ...)

Commands:
  create-user --email ADDRESS [--role ROLE] [--password-stdin]
      create a confirmed user; ROLE supabase_admin (or another of
      AUTHSVC_JWT_ADMIN_ROLES) may sign in to the console. Without
      --password-stdin a random password is generated and printed once.
  set-role --email ADDRESS --role ROLE
      give an existing user a role
  token [--role ROLE] [--ttl DURATION]
      print an admin token (default role service_role, ttl 1h; e.g. 30m, 12h, 30d)
      for the admin API: curl -H "Authorization: Bearer $TOKEN" .../admin/users

The settings are the server's (./.env, --env-file, the environment).`;

/** What the command line prepared: the settings, a generated JWT secret, a logger. */
export interface AdminContext {
  env: Record<string, string | undefined>;
  loaded: { config: Config };
  generated?: GeneratedSecret;
  log: Logger;
}

/** A usage mistake: printed with the hint to see the help, exit code 2. */
class UsageError extends Error {}

function options(args: string[], allowed: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (!allowed.includes(flag)) throw new UsageError(`unknown option "${args[i]}"`);
    if (flag === "--password-stdin") out[flag] = "yes";
    else {
      const v = inline ?? args[++i];
      if (v === undefined || v === "") throw new UsageError(`${flag} needs a value`);
      out[flag] = v;
    }
  }
  return out;
}

/** A duration like 30m, 12h or 30d, in seconds. */
function ttlSeconds(text: string): number {
  const days = /^(\d+)d$/.exec(text.trim());
  const ms = days ? Number(days[1]) * 86_400_000 : parseDurationMs(text);
  if (ms === null || ms < 1000) {
    throw new UsageError(`--ttl: expected a duration like 30m, 12h or 30d, got "${text}"`);
  }
  return Math.floor(ms / 1000);
}

/** A random password that meets AUTHSVC_PASSWORD_MIN_LENGTH and _REQUIRED_CHARACTERS. */
function randomPassword(config: Config): string {
  const pick = (set: string) => set[crypto.getRandomValues(new Uint32Array(1))[0] % set.length];
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  let pw = btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");
  for (const set of config.password.requiredCharacters) pw += pick(set);
  while (pw.length < config.password.minLength) pw += pick("abcdefghijkmnpqrstuvwxyz23456789");
  return pw;
}

async function readStdin(): Promise<string> {
  const text = await new Response(Deno.stdin.readable).text();
  return text.replace(/\r?\n$/, "");
}

/** Signs an admin token with the server's key. */
async function adminToken(ctx: AdminContext, role: string, ttlSec: number): Promise<string> {
  const jwt = await JwtService.create(ctx.loaded.config);
  const iat = Math.floor(Date.now() / 1000);
  return await jwt.sign({ role, sub: "", iat, exp: iat + ttlSec });
}

type Answer = { status: number; json: Record<string, unknown> };

/** The admin API, opened once per command. */
interface AdminApi {
  call(method: string, path: string, body?: unknown): Promise<Answer>;
  close(): Promise<void>;
}

/**
 * The admin API: the running server's when its /health answers (the embedded
 * database serves one process), else a server built in this process.
 */
async function openAdminApi(ctx: AdminContext): Promise<AdminApi> {
  const config = ctx.loaded.config;
  const health = healthUrl(ctx.env);
  const running = await fetch(health, { signal: AbortSignal.timeout(2000) })
    .then(async (r) => (await r.body?.cancel(), r.status === 200))
    .catch(() => false);
  const origin = new URL(health).origin;
  let fetcher: (r: Request) => Promise<Response> = fetch;
  let close = () => Promise.resolve();
  if (!running) {
    const app = await createApp(config, { log: ctx.log });
    try {
      await ctx.generated?.keep();
    } catch (e) {
      await app.close();
      throw e;
    }
    fetcher = (r) => app.fetch(r);
    close = () => app.close();
  }
  // An admin role the admin API takes (AUTHSVC_JWT_ADMIN_ROLES, service_role by default).
  const roles = config.jwt.adminRoles;
  const token = await adminToken(
    ctx,
    roles.includes("service_role") ? "service_role" : roles[0],
    300,
  );
  return {
    close,
    async call(method, path, body) {
      const res = await fetcher(
        new Request(`${origin}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
      const text = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = text ? JSON.parse(text) : {};
      } catch {
        json = { msg: text.slice(0, 200) };
      }
      if (running && res.status === 401) {
        json.msg =
          `${origin} refused this configuration's token: is it the server these settings belong to? (${
            json.msg ?? ""
          })`;
      }
      return { status: res.status, json };
    },
  };
}

/** Runs `fn` with the admin API open. */
async function withAdminApi<T>(ctx: AdminContext, fn: (api: AdminApi) => Promise<T>): Promise<T> {
  const api = await openAdminApi(ctx);
  try {
    return await fn(api);
  } finally {
    await api.close();
  }
}

function failure(what: string, r: Answer): number {
  const msg = r.json.msg ?? r.json.message ?? r.json.error_description ?? JSON.stringify(r.json);
  console.error(
    `${what} failed (${r.status}${r.json.error_code ? ` ${r.json.error_code}` : ""}): ${msg}`,
  );
  return 1;
}

/** What a role opens, said after create-user and set-role. */
function roleNote(config: Config, role: string): string {
  if (!config.jwt.adminRoles.includes(role)) {
    return `role ${role} opens neither the console nor the admin API (AUTHSVC_JWT_ADMIN_ROLES: ${
      config.jwt.adminRoles.join(", ")
    })`;
  }
  const consoleUrl = `${config.api.externalUrl}/console/`;
  return config.console.enabled
    ? `role ${role}: may sign in to the console at ${consoleUrl}`
    : `role ${role}: may use the admin API; set AUTHSVC_CONSOLE_ENABLED=true to use the console at ${consoleUrl}`;
}

async function createUser(ctx: AdminContext, args: string[]): Promise<number> {
  const o = options(args, ["--email", "--role", "--password-stdin"]);
  const email = o["--email"];
  if (!email) throw new UsageError("create-user needs --email");
  const generated = !o["--password-stdin"];
  const password = generated ? randomPassword(ctx.loaded.config) : await readStdin();
  const body: Record<string, unknown> = { email, password, email_confirm: true };
  if (o["--role"]) body.role = o["--role"];
  const r = await withAdminApi(ctx, (api) => api.call("POST", "/admin/users", body));
  if (r.status !== 200) {
    if (r.json.error_code === "email_exists") {
      console.error(
        `a user with the e-mail ${email} exists: give them a role with \`admin set-role --email ${email} --role supabase_admin\``,
      );
      return 1;
    }
    return failure("create-user", r);
  }
  console.log(`created ${r.json.email} (id ${r.json.id})`);
  if (generated) console.log(`password: ${password}   (shown once: keep it in a password manager)`);
  console.log(roleNote(ctx.loaded.config, String(r.json.role)));
  return 0;
}

async function setRole(ctx: AdminContext, args: string[]): Promise<number> {
  const o = options(args, ["--email", "--role"]);
  const email = o["--email"];
  const role = o["--role"];
  if (!email || !role) throw new UsageError("set-role needs --email and --role");
  const q = new URLSearchParams({ filter: email, per_page: "50" });
  const r = await withAdminApi(ctx, async (api): Promise<Answer | string> => {
    const found = await api.call("GET", `/admin/users?${q}`);
    if (found.status !== 200) return found;
    const users = (found.json.users ?? []) as { id: string; email?: string }[];
    const user = users.find((u) => u.email?.toLowerCase() === email.toLowerCase());
    if (!user) return `no user has the e-mail ${email}: create one with \`admin create-user\``;
    return await api.call("PUT", `/admin/users/${user.id}`, { role });
  });
  if (typeof r === "string") {
    console.error(r);
    return 1;
  }
  if (r.status !== 200) return failure("set-role", r);
  console.log(`${email} now has role ${r.json.role}`);
  console.log(roleNote(ctx.loaded.config, String(r.json.role)));
  return 0;
}

async function token(ctx: AdminContext, args: string[]): Promise<number> {
  const o = options(args, ["--role", "--ttl"]);
  const role = o["--role"] ?? "service_role";
  const ttl = ttlSeconds(o["--ttl"] ?? "1h");
  if (ctx.generated && !ctx.generated.kept) {
    // A secret made up now would sign a token no server accepts.
    throw new StartError(
      `AUTHSVC_JWT_SECRET is unset and no server has kept one in AUTHSVC_DB_DATA_DIR yet: start the server once (it generates one), or set AUTHSVC_JWT_SECRET`,
    );
  }
  const jwt = await adminToken(ctx, role, ttl);
  console.log(jwt);
  const until = new Date(Date.now() + ttl * 1000).toISOString();
  console.error(`${role} token, valid until ${until}; anyone holding it is an administrator`);
  if (!ctx.loaded.config.jwt.adminRoles.includes(role)) {
    console.error(`note: ${roleNote(ctx.loaded.config, role)}`);
  }
  return 0;
}

/** Runs `admin <command> ...`; answers the exit code. */
export async function runAdmin(args: string[], ctx: AdminContext): Promise<number> {
  const [command, ...rest] = args;
  const commands: Record<string, (ctx: AdminContext, args: string[]) => Promise<number>> = {
    "create-user": createUser,
    "set-role": setRole,
    token,
  };
  try {
    if (!Object.hasOwn(commands, command)) {
      throw new UsageError(`unknown admin command "${command}"`);
    }
    return await commands[command](ctx, rest);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${e.message} (see admin --help)`);
    return 2;
  }
}
