/**
 * Turns a route and a seeded generator into one hostile request: forged or
 * malformed JWTs, path parameters of every shape, query strings with
 * duplicated and broken parameters, bodies of every JSON type in every
 * member, raw bytes that are not UTF-8, huge and deep bodies, foreign content
 * types, and (on GET, HEAD, DELETE) chunked bodies the route does not read.
 */
import { jose } from "../../deps.ts";
import type { FxUser, GenCtx, RouteSpec } from "./routes.ts";
import type { Rng } from "./rng.ts";
import {
  anyJson,
  anyKey,
  BAD_UTF8,
  deepArrayText,
  deepObjectText,
  edgeString,
  UNICODE_EDGES,
} from "./values.ts";

/** One generated request. */
export interface FuzzRequest {
  route: string;
  kind: string;
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: [string, string][];
  body?: Uint8Array<ArrayBuffer>;
  /** Send over a raw connection with `Transfer-Encoding: chunked`, then probe keep-alive. */
  chunked?: boolean;
}

const enc = new TextEncoder();

/** Bearer values that must never pass: forged, expired, of the wrong role, malformed. */
export interface Forged {
  name: string;
  value: string;
}

/** Builds the forged tokens once per run (the user-bound ones per fixture user). */
export async function forgedTokens(secret: string, users: FxUser[]): Promise<Forged[]> {
  const key = enc.encode(secret);
  const now = Math.floor(Date.now() / 1000);
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
  const sign = (claims: Record<string, unknown>, k = key, alg = "HS256") =>
    new jose.SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).sign(k);
  const u = users[0];
  const [, payload] = u.access.split(".");
  const out: Forged[] = [
    {
      name: "alg none, service_role",
      value: `${b64({ alg: "none", typ: "JWT" })}.${
        b64({ role: "service_role", sub: "", exp: now + 3600 })
      }.`,
    },
    { name: "alg none, user", value: `${b64({ alg: "none" })}.${payload}.` },
    { name: "user token, signature cut", value: u.access.split(".").slice(0, 2).join(".") + "." },
    {
      name: "user token, payload swapped",
      value: u.access.replace(
        payload,
        b64({ sub: users[1]?.id ?? u.id, role: "service_role", exp: now + 3600 }),
      ),
    },
    {
      name: "wrong key",
      value: await sign(
        { role: "service_role", sub: "", exp: now + 3600 },
        enc.encode("x".repeat(48)),
      ),
    },
    {
      name: "HS512 with the secret",
      value: await sign({ role: "service_role", sub: "", exp: now + 3600 }, key, "HS512"),
    },
    {
      name: "expired service_role",
      value: await sign({ role: "service_role", sub: "", exp: now - 60, iat: now - 7200 }),
    },
    {
      name: "expired user",
      value: await sign({ role: "authenticated", sub: u.id, exp: now - 60, aud: "authenticated" }),
    },
    {
      name: "not yet valid",
      value: await sign({ role: "service_role", nbf: now + 3600, exp: now + 7200 }),
    },
    { name: "role anon", value: await sign({ role: "anon", sub: "", exp: now + 3600 }) },
    {
      name: "role authenticated, no sub",
      value: await sign({ role: "authenticated", exp: now + 3600 }),
    },
    { name: "role supabase_admin", value: await sign({ role: "supabase_admin", exp: now + 3600 }) },
    { name: "role of wrong type", value: await sign({ role: ["service_role"], exp: now + 3600 }) },
    {
      name: "sub not a uuid",
      value: await sign({
        role: "authenticated",
        sub: "' OR 1=1 --",
        session_id: "x",
        exp: now + 3600,
      }),
    },
    {
      name: "unknown session of a real user",
      value: await sign({
        role: "authenticated",
        sub: u.id,
        session_id: crypto.randomUUID(),
        exp: now + 3600,
        aud: "authenticated",
      }),
    },
    {
      name: "claims with edge strings",
      value: await sign({
        role: "authenticated",
        sub: "\ud800",
        session_id: "\u0000",
        email: "\u202e",
        exp: now + 3600,
      }),
    },
    { name: "exp huge", value: await sign({ role: "service_role", exp: 1e300 }) },
    { name: "exp a string", value: await sign({ role: "service_role", exp: "never" }) },
    { name: "not a jwt", value: "abc" },
    { name: "dots", value: ".." },
    { name: "garbage parts", value: "a.b.c" },
    { name: "bad base64", value: "%%%.%%%.%%%" },
    { name: "huge", value: "a".repeat(9000) },
    { name: "header JSON array", value: `${b64([1])}.${b64({})}.x` },
  ];
  return out;
}

/** Names a console asset path may carry: its files, and what must never be served. */
const ASSET_NAMES = [
  "app.js",
  "app.css",
  "icon.svg",
  "index.html",
  "..%2F..%2F.env",
  "%2e%2e%2fdeno.json",
  "__proto__",
  "constructor",
  "toString",
  "app.js%00",
  "a".repeat(3000),
];

/** Fills `:param`s: mostly the caller's own ids, sometimes another user's, unknown or malformed. */
function fillPath(g: GenCtx, path: string): { path: string; kind?: string } {
  let kind: string | undefined;
  const filled = path.replace(/:([a-z_]+)/g, (_, name: string) => {
    if (name === "name") return g.r.pick(ASSET_NAMES);
    const own = name === "user_id"
      ? g.me.id
      : name === "factor_id"
      ? g.me.factorId
      : g.me.identityId;
    const x = g.r.int(10);
    if (x < 6) return own;
    if (x === 6) return name === "user_id" ? g.other.id : g.r.uuid();
    if (x === 7) return own.toUpperCase();
    kind = `bad ${name}`;
    return g.r.pick([
      "not-a-uuid",
      "00000000-0000-0000-0000-00000000000g",
      "%27%3B%20DROP%20TABLE%20users%3B--",
      "%ff%fe",
      "%00",
      "%ED%A0%80",
      "%C0%AF",
      encodeURIComponent("\u202e" + own),
      "a".repeat(3000),
      "..%2F..%2Fetc%2Fpasswd",
      own + "%00",
    ]);
  });
  return { path: filled, kind };
}

function encodeQueryValue(r: Rng, v: unknown): string {
  if (typeof v !== "string") v = JSON.stringify(v) ?? "";
  const s = v as string;
  // toWellFormed: encodeURIComponent throws on lone surrogates; the raw forms come below
  return r.chance(0.1)
    ? s.toWellFormed().replaceAll(" ", "+")
    : encodeURIComponent(s.toWellFormed());
}

function buildQuery(g: GenCtx, spec: RouteSpec): { query: string; kind: string } {
  const { r } = g;
  const parts: string[] = [];
  let kind = "query";
  if (spec.fixedQuery) parts.push(spec.fixedQuery);
  for (const [name, gen] of Object.entries(spec.query ?? {})) {
    if (r.chance(0.25)) continue;
    const v = r.chance(0.7) ? gen(g) : anyJson(r, 1);
    parts.push(`${name}=${encodeQueryValue(r, v)}`);
  }
  const names = [...Object.keys(spec.query ?? {}), "grant_type", "redirect_to", "page", "type"];
  const x = r.int(20);
  if (x < 4) {
    // duplicated parameters, the second one different
    const name = r.pick(names);
    parts.push(`${name}=${encodeQueryValue(r, edgeString(r))}`);
    parts.push(`${name}=${encodeQueryValue(r, r.pick(["1", "", "global", "password"]))}`);
    kind = "duplicated query parameters";
  } else if (x === 4) {
    parts.push(
      `${r.pick(names)}=${
        r.pick(["%", "%zz", "%ff%fe", "%00", "%ED%A0%80", "%C0%AF", "%E2%80%AE"])
      }`,
    );
    kind = "broken percent-encoding";
  } else if (x === 5) {
    parts.push(`${r.pick(names)}=${"a".repeat(r.range(2000, 20000))}`);
    kind = "huge query";
  } else if (x === 6) {
    parts.push(`${r.pick(names)}[]=1&${r.pick(names)}[x]=2&=&&=x`);
    kind = "odd query syntax";
  }
  return { query: parts.join("&"), kind };
}

function replaceBytes(
  hay: Uint8Array,
  needle: Uint8Array,
  withBytes: number[],
): Uint8Array<ArrayBuffer> {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    const out = new Uint8Array(hay.length - needle.length + withBytes.length);
    out.set(hay.subarray(0, i));
    out.set(withBytes, i);
    out.set(hay.subarray(i + needle.length), i + withBytes.length);
    return out;
  }
  return new Uint8Array(hay);
}

function plausible(g: GenCtx, spec: RouteSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, gen] of Object.entries(spec.body ?? {})) {
    if (g.r.chance(0.3)) continue;
    out[name] = gen(g);
  }
  return out;
}

interface Body {
  kind: string;
  type?: string;
  bytes: Uint8Array<ArrayBuffer>;
}

function buildBody(g: GenCtx, spec: RouteSpec, maxBody: number): Body | undefined {
  const { r } = g;
  const json = (kind: string, v: unknown): Body => ({
    kind,
    type: "application/json",
    bytes: enc.encode(JSON.stringify(v)),
  });
  const fields = Object.keys(spec.body ?? {});
  const field = () => fields.length && r.chance(0.85) ? r.pick(fields) : anyKey(r);
  const x = r.int(100);
  if (x < 12) return json("plausible body", plausible(g, spec));
  if (x < 45) {
    const b = plausible(g, spec);
    const f = field();
    b[f] = r.chance(0.5) ? anyJson(r, 3) : edgeString(r);
    return json(`${f} mutated`, b);
  }
  if (x < 55) {
    const b = plausible(g, spec);
    for (const f of fields) if (r.chance(0.5)) b[f] = anyJson(r, 2);
    return json("several members mutated", b);
  }
  if (x < 62) {
    const b: Record<string, unknown> = {};
    for (let i = r.range(1, 6); i > 0; i--) b[anyKey(r)] = anyJson(r, 3);
    return json("random object", b);
  }
  if (x < 68) {
    const b = plausible(g, spec);
    const f = field();
    b[f] = "FUZZRAWMARK";
    const seq = r.pick(BAD_UTF8);
    return {
      kind: `${f} not UTF-8 [${seq.map((n) => n.toString(16)).join(" ")}]`,
      type: "application/json",
      bytes: replaceBytes(enc.encode(JSON.stringify(b)), enc.encode("FUZZRAWMARK"), seq),
    };
  }
  if (x < 71) {
    const b = plausible(g, spec);
    const f = field();
    const size = r.pick([64 * 1024, maxBody - 200, maxBody + 1, 3 * maxBody]);
    b[f] = r.pick(["a", "\u00e9", "\u{1f600}", "\ud800"]).repeat(Math.max(1, Math.floor(size / 4)));
    return json(`${f} huge (~${size} bytes)`, b);
  }
  if (x < 73) {
    const keys: Record<string, number> = {};
    for (let i = r.range(1000, 60000); i > 0; i--) keys[`k${i}`] = i;
    return json("many members", { ...plausible(g, spec), ...keys });
  }
  if (x < 77) {
    const n = r.pick([31, 32, 33, 100, 5000, 100000]);
    const f = fields.length ? r.pick(fields) : "data";
    const text = r.chance(0.5) ? deepObjectText(n, f) : `{"${f}":${deepArrayText(n)}}`;
    return { kind: `${f} nested ${n} deep`, type: "application/json", bytes: enc.encode(text) };
  }
  if (x < 82) {
    const text = r.pick([
      "[]",
      "[1,2]",
      '"string"',
      "42",
      "null",
      "true",
      "{",
      '{"email": ',
      "{'a': 1}",
      '{"a":1}{"b":2}',
      '{"a":1,}',
      "\ufeff{}",
      '{"a":NaN}',
      '{"__proto__":{"role":"service_role"}}',
      `{"email":"${"\\ud800"}@example.com","password":"x"}`,
    ]);
    return { kind: `body ${text.slice(0, 20)}`, type: "application/json", bytes: enc.encode(text) };
  }
  if (x < 88) {
    const b = plausible(g, spec);
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(b)) {
      form.append(k, typeof v === "string" ? v.toWellFormed() : JSON.stringify(v) ?? "");
    }
    if (r.chance(0.3)) form.append(field(), edgeString(r).toWellFormed());
    return {
      kind: "form-encoded",
      type: "application/x-www-form-urlencoded",
      bytes: enc.encode(r.chance(0.2) ? form.toString() + "&%zz=%ff&a=%00" : form.toString()),
    };
  }
  if (x < 93) {
    const type = r.pick([
      "text/plain",
      "application/xml",
      "multipart/form-data; boundary=x",
      "application/json; charset=latin1",
      "application/json; charset=utf-16",
      "",
      "application/octet-stream",
      'a/b; c="d"',
    ]);
    return {
      kind: `content-type ${JSON.stringify(type)}`,
      type,
      bytes: enc.encode(JSON.stringify(plausible(g, spec))),
    };
  }
  if (x < 97) return { kind: "empty body", type: "application/json", bytes: new Uint8Array(0) };
  return undefined;
}

/**
 * The console's caller: mostly the operator's cookies and CSRF header; else a wrong or missing
 * CSRF header, a foreign Origin, a forged or a plain user's access token in the cookie, or no
 * session. The operator's refresh token goes only with its access token (the console would
 * rotate it otherwise, and the fuzz would hold a used one).
 */
function consoleCaller(
  g: GenCtx,
  spec: RouteSpec,
  forged: Forged[],
  headers: [string, string][],
  kinds: string[],
): void {
  const { r } = g;
  const c = g.console;
  if (!c) return;
  const cookies: Record<string, string> = { authsvc_console_csrf: c.csrf };
  let csrf: string | undefined = c.csrf;
  const x = r.int(100);
  if (x < 84) {
    cookies.authsvc_console_at = c.at;
    cookies.authsvc_console_rt = c.rt;
    if (x >= 70 && x < 78) {
      csrf = r.pick([undefined, "", "wrong", `${c.csrf}x`, c.csrf.toUpperCase()]);
      kinds.push("console: wrong CSRF header");
    } else if (x >= 78) {
      headers.push([
        "origin",
        r.pick(["https://evil.example", "null", `${c.origin}.evil.example`]),
      ]);
      if (r.chance(0.5)) headers.push(["sec-fetch-site", r.pick(["same-site", "cross-site"])]);
      kinds.push("console: foreign origin");
    } else if (r.chance(0.3)) headers.push(["origin", c.origin]);
  } else if (x < 90) {
    const f = r.pick(forged);
    cookies.authsvc_console_at = f.value;
    cookies.authsvc_console_rt = r.pick(["", "x", "a".repeat(200)]);
    kinds.push(`console: JWT ${f.name}`);
  } else if (x < 95) {
    cookies.authsvc_console_at = g.me.access;
    kinds.push("console: a user's token");
  } else {
    kinds.push("console: signed out");
  }
  if (spec.path.includes("/mfa/") && r.chance(0.6)) {
    cookies.authsvc_console_mfa = r.pick([`${g.me.access} ${g.me.refresh}`, "x y", edgeString(r)]);
    kinds.push("console: pending MFA cookie");
  }
  headers.push([
    "cookie",
    Object.entries(cookies).map(([k, v]) => `${k}=${encodeURIComponent(v.toWellFormed())}`)
      .join("; "),
  ]);
  if (csrf !== undefined) headers.push(["x-csrf-token", csrf]);
}

/** Generates request `g` for `spec`. */
export function generate(
  g: GenCtx,
  spec: RouteSpec,
  forged: Forged[],
  adminToken: string,
  maxBody: number,
): FuzzRequest {
  const { r } = g;
  const kinds: string[] = [];
  const headers: [string, string][] = [];
  // who calls
  const right = spec.auth === "admin" ? adminToken : spec.auth === "user" ? g.me.access : undefined;
  const a = r.int(100);
  if (spec.auth === "console") {
    consoleCaller(g, spec, forged, headers, kinds);
  } else if (a < 72) {
    if (right) headers.push(["authorization", `Bearer ${right}`]);
  } else if (a < 90) {
    const f = r.pick(forged);
    headers.push(["authorization", `Bearer ${f.value}`]);
    kinds.push(`JWT ${f.name}`);
  } else {
    const v = r.pick([
      `Bearer ${spec.auth === "admin" ? g.me.access : adminToken}`,
      `bearer ${right ?? g.me.access}`,
      `Basic ${btoa("a:b")}`,
      "Bearer",
      "Bearer ",
      `Bearer  ${right ?? adminToken}`,
      `Bearer ${right ?? adminToken} extra`,
    ]);
    headers.push(["authorization", v]);
    if (r.chance(0.3)) headers.push(["authorization", `Bearer ${adminToken}`]);
    kinds.push(`authorization ${JSON.stringify(v.slice(0, 12))}`);
  }
  const { path, kind: pathKind } = fillPath(g, spec.path);
  if (pathKind) kinds.push(pathKind);
  const { query, kind: queryKind } = buildQuery(g, spec);
  if (queryKind !== "query") kinds.push(queryKind);
  if (r.chance(0.05)) {
    headers.push([
      r.pick(["x-forwarded-for", "user-agent", "x-request-id", "origin", "accept-language"]),
      r.pick(["1.2.3.4, garbage", "a".repeat(6000), "unknown", "::1, 300.1.1.1", "null"]),
    ]);
    kinds.push("odd header");
  }
  const req: FuzzRequest = {
    route: spec.name,
    kind: "",
    method: spec.method,
    target: query ? `${path}?${query}` : path,
    headers,
  };
  if (
    spec.method === "POST" || spec.method === "PUT" || (spec.method === "DELETE" && r.chance(0.6))
  ) {
    const body = buildBody(g, spec, maxBody);
    if (body) {
      kinds.push(body.kind);
      if (body.type !== undefined) headers.push(["content-type", body.type]);
      req.body = body.bytes;
    }
  }
  if (
    (spec.method === "GET" || spec.method === "HEAD" || spec.method === "DELETE") && r.chance(0.06)
  ) {
    req.chunked = true;
    req.body = enc.encode(
      r.pick(['{"a":1}', "x".repeat(r.range(1, 70000)), UNICODE_EDGES.join("")]),
    );
    headers.push(["content-type", "application/json"]);
    kinds.push("chunked body on a body-less method");
  }
  req.kind = kinds.join("; ") || "plain";
  return req;
}

/** A one-line description of a request, to reproduce it by hand. */
export function describe(req: FuzzRequest): string {
  const dec = new TextDecoder();
  const body = req.body
    ? JSON.stringify(dec.decode(req.body.subarray(0, 300))) +
      (req.body.length > 300 ? ` …(${req.body.length} bytes)` : "")
    : "none";
  const hdrs = req.headers.map(([k, v]) => `${k}: ${v.length > 60 ? v.slice(0, 60) + "…" : v}`);
  return `${req.method} ${
    req.target.length > 300 ? req.target.slice(0, 300) + "…" : req.target
  } [${req.kind}]${req.chunked ? " (chunked)" : ""} headers ${JSON.stringify(hdrs)} body ${body}`;
}
