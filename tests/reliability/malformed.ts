/**
 * Generated malformed requests for the bad-input suite: wrong types, missing
 * fields, huge strings, deep JSON, invalid UTF-8, wrong content types, bad
 * UUIDs, SQL and template injection strings, bogus JWTs.
 */
import { jose } from "../../deps.ts";

/** One request to send. */
export interface BadRequest {
  /** What kind of bad input this is (for the report). */
  kind: string;
  /** Appended to the route's path (a query string) or "" . */
  query: string;
  /** The body and its content type; undefined sends none. */
  body?: { type: string; bytes: Uint8Array<ArrayBuffer> };
  /** Authorization header value, or undefined for none. */
  auth?: string;
  /** Whatever the route does with `{}`, this must be a 4xx. */
  must4xx: boolean;
  /** This exact status is required. */
  mustStatus?: number;
}

const enc = new TextEncoder();
const json = (v: unknown) => ({ type: "application/json", bytes: enc.encode(JSON.stringify(v)) });
const raw = (type: string, text: string | Uint8Array<ArrayBuffer>) => ({
  type,
  bytes: typeof text === "string" ? enc.encode(text) : text,
});

/** SQL and template injection strings, and other hostile text. */
export const HOSTILE_STRINGS = [
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  '" OR 1=1 --',
  "1; SELECT pg_sleep(10); --",
  "{{ .Token }}{{ .SiteURL }}",
  "${7*7}#{7*7}<%= 7*7 %>",
  "{{constructor.constructor('return process')()}}",
  "<script>alert(1)</script>",
  "../../../../etc/passwd",
  "\u0000nul\u0000",
  "\ud800 lone surrogate",
  "javascript:alert(1)",
  "a@b.c\r\nBcc: victim@example.com",
  "+1 (555) 0100' --",
  "__proto__",
];

/** Values of the wrong type for any field. */
export const WRONG_TYPES: unknown[] = [
  123,
  -1.5e308,
  true,
  [],
  ["a", "b"],
  {},
  { $gt: "" },
  { __proto__: { admin: true } },
  "",
  " ",
];

/** Field names the endpoints read (every one is set in the generated bodies). */
export const FIELDS = [
  "email",
  "password",
  "phone",
  "token",
  "token_hash",
  "refresh_token",
  "type",
  "data",
  "user_metadata",
  "app_metadata",
  "role",
  "ban_duration",
  "email_confirm",
  "phone_confirm",
  "create_user",
  "channel",
  "code_challenge",
  "code_challenge_method",
  "redirect_to",
  "nonce",
  "factor_type",
  "friendly_name",
  "issuer",
  "code",
  "challenge_id",
  "provider",
  "auth_code",
  "code_verifier",
  "should_soft_delete",
  "password_hash",
  "id",
  "user_id",
  "grant_type",
  "captcha_token",
  "gotrue_meta_security",
  "options",
  "scopes",
  "state",
];

/** Query parameters the endpoints read. */
const QUERY_PARAMS = [
  "grant_type",
  "redirect_to",
  "page",
  "per_page",
  "filter",
  "type",
  "token",
  "provider",
  "scopes",
  "code",
  "state",
  "scope",
  "query",
  "error",
  "code_challenge",
  "code_challenge_method",
];

function allFields(v: unknown): Record<string, unknown> {
  return Object.fromEntries(FIELDS.map((f) => [f, v]));
}

function queryOf(v: string): string {
  return "?" + QUERY_PARAMS.map((p) => `${p}=${encodeURIComponent(v.toWellFormed())}`).join("&");
}

/** Bogus bearer tokens, some of them correctly signed with nonsensical claims. */
export async function bogusJwts(
  secret: string,
  realUserId: string,
): Promise<{ name: string; token: string }[]> {
  const key = new TextEncoder().encode(secret);
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, k: Uint8Array = key) =>
    new jose.SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(k);
  const b64 = (o: unknown) => btoa(JSON.stringify(o)).replace(/=+$/, "");
  return [
    { name: "not a jwt", token: "abc" },
    { name: "three empty parts", token: ".." },
    { name: "garbage parts", token: "a.b.c" },
    {
      name: "alg none",
      token: `${b64({ alg: "none" })}.${b64({ sub: crypto.randomUUID(), role: "service_role" })}.`,
    },
    {
      name: "wrong secret",
      token: await sign(
        { sub: crypto.randomUUID(), role: "service_role", exp: now + 600 },
        enc.encode("another-secret-another-secret-another-secret"),
      ),
    },
    {
      name: "expired",
      token: await sign({ sub: crypto.randomUUID(), role: "authenticated", exp: now - 3600 }),
    },
    {
      name: "sub not a uuid",
      token: await sign({ sub: "'; DROP TABLE users; --", role: "authenticated", exp: now + 600 }),
    },
    {
      name: "session_id not a uuid",
      token: await sign({
        sub: crypto.randomUUID(),
        session_id: "../../x",
        role: "authenticated",
        exp: now + 600,
      }),
    },
    {
      name: "claims of wrong types",
      token: await sign({ sub: 12, session_id: {}, role: [], aal: 5, amr: "x", exp: now + 600 }),
    },
    {
      name: "unknown user",
      token: await sign({
        sub: crypto.randomUUID(),
        session_id: crypto.randomUUID(),
        role: "authenticated",
        exp: now + 600,
      }),
    },
    {
      name: "session_id not a uuid, real user",
      token: await sign({
        sub: realUserId,
        session_id: "'; DROP TABLE sessions; --",
        role: "authenticated",
        exp: now + 600,
      }),
    },
    {
      name: "unknown session, real user",
      token: await sign({
        sub: realUserId,
        session_id: crypto.randomUUID(),
        role: "authenticated",
        exp: now + 600,
      }),
    },
    { name: "huge", token: "a".repeat(6000) },
  ];
}

/** Malformed bodies and queries for a route with a body (POST, PUT, PATCH, DELETE). */
export function bodyRequests(maxBodyBytes: number): BadRequest[] {
  const out: BadRequest[] = [];
  const add = (kind: string, body: BadRequest["body"], must4xx: boolean, mustStatus?: number) =>
    out.push({ kind, query: "", body, must4xx, mustStatus });
  add("truncated JSON", raw("application/json", '{"email": "a@b.co", "password": '), true);
  add("JSON array", json([1, 2, 3]), true);
  add("JSON string", json("hello"), true);
  add("JSON number", raw("application/json", "42"), true);
  add("JSON null", raw("application/json", "null"), false); // "no body" reading is allowed
  add(
    "invalid UTF-8",
    raw(
      "application/json",
      new Uint8Array([
        ...enc.encode('{"email":"'),
        0xff,
        0xfe,
        ...enc.encode('@x.com","password":"'),
        0xc3,
        0x28,
        ...enc.encode('"}'),
      ]),
    ),
    true,
  );
  add(
    "deep JSON arrays",
    raw("application/json", `{"data":${"[".repeat(20000)}${"]".repeat(20000)}}`),
    true,
  );
  let deep = "{}";
  for (let i = 0; i < 200; i++) deep = `{"data":${deep}}`;
  add("deep JSON objects", raw("application/json", deep), true);
  add("XML body", raw("application/xml", "<signup><email>a@b.co</email></signup>"), true);
  add(
    "multipart body",
    raw("multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data\r\n\r\n"),
    true,
  );
  add("form garbage", raw("application/x-www-form-urlencoded", "%zz=%%&email=%ff"), false);
  add("text/plain JSON", raw("text/plain", JSON.stringify(allFields(123))), false);
  add("over the size limit", json({ data: "x".repeat(maxBodyBytes + 10) }), true, 413);
  add(
    "huge strings",
    json(allFields("a".repeat(200_000) + "@example.com")),
    true,
  );
  add("missing fields", json({}), false);
  for (const v of WRONG_TYPES) add(`wrong type ${JSON.stringify(v)}`, json(allFields(v)), false);
  for (const s of HOSTILE_STRINGS) add(`hostile ${JSON.stringify(s)}`, json(allFields(s)), false);
  // One field of the wrong type in an otherwise plausible body, so checks after the first
  // field are reached too.
  for (const field of Object.keys(PLAUSIBLE)) {
    for (const v of [123, [], {}]) {
      add(
        `${field} as ${JSON.stringify(v)} in a plausible body`,
        json({ ...PLAUSIBLE, email: `plausible-${crypto.randomUUID()}@example.com`, [field]: v }),
        false,
      );
    }
  }
  return out;
}

/** A body that most endpoints would take as well-formed. */
const PLAUSIBLE: Record<string, unknown> = {
  email: "plausible@example.com",
  password: "Plausible-pw-123",
  type: "signup",
  token: "123456",
  refresh_token: "not-a-real-refresh-token",
  data: { name: "x" },
  redirect_to: "http://localhost:3000/welcome",
  code: "123456",
  factor_type: "totp",
  friendly_name: "phone",
  challenge_id: "00000000-0000-4000-8000-000000000000",
  user_metadata: { a: 1 },
  app_metadata: { b: 2 },
};

/** Hostile query strings (for every route). */
export function queryRequests(): BadRequest[] {
  const out: BadRequest[] = [];
  for (const s of [...HOSTILE_STRINGS, "-1", "1e309", "a".repeat(1000)]) {
    out.push({
      kind: `query ${JSON.stringify(s.slice(0, 30))}`,
      query: queryOf(s),
      must4xx: false,
    });
  }
  out.push({
    kind: "query invalid percent-encoding",
    query: "?redirect_to=%ff%fe&page=%zz&type=%",
    must4xx: false,
  });
  out.push({
    kind: "query repeated params",
    query: "?page=1&page=2&grant_type=password&grant_type=refresh_token",
    must4xx: false,
  });
  return out;
}

/** Query parameters the admin routes read (and a few they do not, which must be ignored). */
export const ADMIN_QUERY_PARAMS = ["page", "per_page", "filter", "query", "sort", "order"];

/** `query=` scopes of /admin/audit that name no own scope (prototype members among them). */
const BAD_SCOPES = [
  "__proto__:x",
  "constructor:x",
  "toString:x",
  "valueOf:",
  "hasOwnProperty:x",
  "__defineGetter__:x",
  ":x",
  "action",
  "ACTION:x",
];

/**
 * Hostile values in every admin query parameter, one parameter at a time (so
 * each reaches its own check): the hostile strings, a NUL (must be a 400),
 * each audit scope with a hostile text, prototype scopes, repeated and huge
 * parameters. Every answer must be below 500, and its headers small (the
 * route must not echo the query into `Link`).
 */
export function adminQueryRequests(): BadRequest[] {
  const out: BadRequest[] = [];
  const add = (kind: string, query: string, mustStatus?: number) =>
    out.push({ kind, query, must4xx: mustStatus !== undefined, mustStatus });
  const enc = (v: string) => encodeURIComponent(v.toWellFormed());
  for (const p of ADMIN_QUERY_PARAMS) {
    for (
      const v of [...HOSTILE_STRINGS, "-1", "0", "1e309", "1.5", "0x10", "99999999999999999999"]
    ) {
      add(`admin ${p}=${JSON.stringify(v.slice(0, 20))}`, `?${p}=${enc(v)}`);
    }
    add(`admin ${p} with a NUL`, `?${p}=a%00b`, 400);
    add(`admin ${p} repeated`, `?${p}=1&${p}=__proto__&${p}=%00`, 400);
    add(`admin ${p} 20 kB`, `?${p}=${"9".repeat(20_000)}`);
  }
  for (const scope of ["action", "author", "type"]) {
    for (const v of HOSTILE_STRINGS) {
      add(`admin query=${scope}:${JSON.stringify(v.slice(0, 20))}`, `?query=${scope}:${enc(v)}`);
    }
    add(`admin query=${scope}: with a NUL`, `?query=${scope}:%00`, 400);
  }
  for (const scope of BAD_SCOPES) add(`admin query=${scope}`, `?query=${enc(scope)}`);
  add("admin unknown parameters, 2 x 6 kB", `?junk=${"j".repeat(6000)}&junk2=${"k".repeat(6000)}`);
  add("admin parameter name with a NUL", "?pa%00ge=1", 400);
  return out;
}

/** Replacements for a UUID path parameter. */
export const BAD_UUIDS = [
  "not-a-uuid",
  "00000000-0000-0000-0000-00000000000g",
  "'; DROP TABLE users; --",
  "%ff%fe",
  "1",
  "a".repeat(5000),
  "00000000-0000-0000-0000-000000000000",
  crypto.randomUUID(),
];
