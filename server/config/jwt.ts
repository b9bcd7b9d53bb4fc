/**
 * The JWTs this server issues: the HS256 secret or a key set, lifetime,
 * audience and the roles that open the admin API. A published or short
 * secret stops the start (docs/security.md).
 */
import { isPublishedSecret } from "./published_secrets.ts";
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const JWT_SECTION: SectionDoc = {
  title: "JWT",
  about:
    "Signing of access tokens, their lifetime and audience, and the roles the admin API accepts ([security.md](security.md)).",
};

/** Shortest JWT_SECRET accepted (RFC 7518 3.2: an HS256 key of at least 256 bits). */
export const MIN_JWT_SECRET_BYTES = 32;

/** The JWT settings. */
export interface JwtConfig {
  secret: string;
  exp: number;
  aud: string;
  adminGroupName: string;
  defaultGroupName: string;
  adminRoles: string[];
  /** Key set for asymmetric signing (JWKs with private parts for the signing key). */
  keys: JsonWebKey[];
}

export function readJwt(r: ConfigReader): JwtConfig {
  const jwt: JwtConfig = {
    secret: jwtSecret(r),
    exp: r.int("JWT_EXP", { default: 3600, min: 30, doc: "access token lifetime in seconds" }),
    aud: r.string("JWT_AUD", { default: "authenticated", doc: "audience of issued tokens" }),
    adminGroupName: r.string("JWT_ADMIN_GROUP_NAME", {
      default: "admin",
      doc:
        "inherited, no effect (logged as deprecated when set); admin access goes by JWT_ADMIN_ROLES",
    }),
    defaultGroupName: r.string("JWT_DEFAULT_GROUP_NAME", { doc: "group given to new users" }),
    adminRoles: r.list("JWT_ADMIN_ROLES", {
      default: ["service_role", "supabase_admin"],
      doc: "role claims accepted as admin",
    }),
    keys: r.json<JsonWebKey[]>("JWT_KEYS", isJwkArray, {
      default: [],
      doc: "JSON array of JWKs; the key whose key_ops has sign signs, all verify",
    }) ?? [],
  };
  checkJwtSecret(r, jwt.secret, jwt.keys);
  if (jwt.keys.length && !jwt.keys.some((k) => k.key_ops?.includes("sign"))) {
    r.problem("AUTHSVC_JWT_KEYS: no key has key_ops containing sign");
  }
  if (r.env.AUTHSVC_JWT_ADMIN_GROUP_NAME?.trim()) {
    // group data in JWTs is an inherited GoTrue feature: admin access goes by JWT_ADMIN_ROLES
    r.deprecations.push(
      "AUTHSVC_JWT_ADMIN_GROUP_NAME is deprecated and has no effect: admin endpoints accept the roles of AUTHSVC_JWT_ADMIN_ROLES",
    );
  }
  return jwt;
}

function isJwkArray(v: unknown): string | null {
  if (!Array.isArray(v)) return "expected a JSON array of JWKs";
  for (const k of v) {
    if (typeof k !== "object" || k === null || typeof (k as { kty?: unknown }).kty !== "string") {
      return "every key needs a kty";
    }
  }
  return null;
}

/**
 * JWT_SECRET. The reader needs it; the documented default is `serve`'s
 * (server/jwt_secret.ts fills it in when the variable is absent).
 */
function jwtSecret(r: ConfigReader): string {
  const secret = r.string("JWT_SECRET", {
    doc: "HS256 secret, 32+ bytes; when unset, one is generated and kept in DB_DATA_DIR/jwt_secret",
  });
  if (!secret) r.problem("AUTHSVC_JWT_SECRET: required, expected string");
  return secret;
}

/**
 * Refuses a published or short JWT_SECRET, and a symmetric key of JWT_KEYS
 * that is a published secret, unless JWT_ALLOW_WEAK_SECRET says this is a
 * development server. The secret itself never appears in a problem.
 */
function checkJwtSecret(r: ConfigReader, secret: string, keys: JsonWebKey[]): void {
  const allowWeak = r.bool("JWT_ALLOW_WEAK_SECRET", {
    doc: "development only: accept a published JWT_SECRET or one shorter than 32 bytes",
  });
  if (allowWeak) return;
  const how =
    "unset it to have a random one generated, or set 32+ random bytes (AUTHSVC_JWT_ALLOW_WEAK_SECRET=true accepts it on a development server)";
  keys.forEach((k, i) => {
    if (k.kty !== "oct" || typeof k.k !== "string") return;
    let bytes: Uint8Array | undefined;
    try {
      bytes = Uint8Array.from(
        atob(k.k.replaceAll("-", "+").replaceAll("_", "/")),
        (ch) => ch.charCodeAt(0),
      );
    } catch { /* not base64url: no secret anyone published */ }
    if (bytes && isPublishedSecret(bytes)) {
      r.problem(
        `AUTHSVC_JWT_KEYS: key ${i} (kty oct) is a published example secret, anyone could sign admin tokens with it; set 32+ random bytes (AUTHSVC_JWT_ALLOW_WEAK_SECRET=true accepts it on a development server)`,
      );
    }
  });
  if (!secret) return;
  if (isPublishedSecret(secret)) {
    r.problem(
      `AUTHSVC_JWT_SECRET: is a published example secret, anyone could sign admin tokens with it; ${how}`,
    );
  } else if (new TextEncoder().encode(secret).length < MIN_JWT_SECRET_BYTES) {
    r.problem(
      `AUTHSVC_JWT_SECRET: shorter than ${MIN_JWT_SECRET_BYTES} bytes, too easy to guess; ${how}`,
    );
  }
}
