/**
 * Hostile provider claims for the fuzz: ID tokens that a local OpenID issuer
 * (tests/helpers/id_token_issuer.ts) signs validly, for the providers the
 * fuzz server trusts it as (google and keycloak), whose claims carry every
 * kind of hostile value: NUL characters, lone surrogates, controls and bidi
 * marks, wrong JSON types, huge and deeply nested values, hostile member
 * names. `POST /token?grant_type=id_token` gets them past the signature
 * check, to the code that maps and stores claims (the same as /callback's).
 */
import type { LocalIssuer } from "../helpers/id_token_issuer.ts";
import type { Rng } from "./rng.ts";
import type { SignedIdToken } from "./routes.ts";
import { anyJson, edgeString, emailish, UNICODE_EDGES } from "./values.ts";

/** The client id the fuzz server accepts ID tokens for. */
export const ID_TOKEN_CLIENT = "fuzz-app";

/** The server settings that trust `issuer` as google and as a keycloak realm. */
export function idTokenProviderEnv(issuer: LocalIssuer): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [p, url] of Object.entries(issuerUrls(issuer))) {
    const X = `AUTHSVC_EXTERNAL_${p.toUpperCase()}`;
    env[`${X}_ENABLED`] = "true";
    env[`${X}_CLIENT_ID`] = ID_TOKEN_CLIENT;
    env[`${X}_SECRET`] = "fuzz-unused";
    env[`${X}_REDIRECT_URI`] = "http://localhost:8081/callback";
    env[`${X}_URL`] = url;
  }
  return env;
}

function issuerUrls(issuer: LocalIssuer): Record<string, string> {
  return { google: issuer.url, keycloak: `${issuer.url}/realms/fuzz` };
}

/** The claims an ID token may carry, and the mapping reads. */
const CLAIMS = [
  "sub",
  "email",
  "email_verified",
  "name",
  "given_name",
  "family_name",
  "picture",
  "preferred_username",
  "hd",
  "groups",
];

/** A hostile value for a claim. */
function hostileValue(r: Rng, tag: string): unknown {
  switch (r.int(8)) {
    case 0:
      return r.pick(UNICODE_EDGES);
    case 1:
    case 2:
      return edgeString(r);
    case 3:
      return `${emailish(r, tag).replace("@", r.pick(UNICODE_EDGES) + "@")}`;
    case 4:
      return anyJson(r, 3);
    case 5:
      return r.pick(["a", "\u00e9", "\ud800"]).repeat(r.range(200, 1500));
    case 6: {
      let v: unknown = r.pick(UNICODE_EDGES);
      for (let i = r.range(5, 40); i > 0; i--) v = { [r.pick(UNICODE_EDGES)]: v };
      return v;
    }
    default:
      return r.pick([null, true, 0, -1, [], {}, [r.pick(UNICODE_EDGES)]]);
  }
}

/**
 * `n` ID tokens with hostile claims, signed by `issuer` for google or
 * keycloak: a plausible base (a fresh sub and address) with one to three
 * claims (or member names) replaced by hostile values.
 */
export async function hostileIdTokens(
  issuer: LocalIssuer,
  r: Rng,
  n: number,
): Promise<SignedIdToken[]> {
  const urls = issuerUrls(issuer);
  const now = Math.floor(Date.now() / 1000);
  const out: SignedIdToken[] = [];
  for (let i = 0; i < n; i++) {
    const provider = r.pick(Object.keys(urls));
    const tag = `idt${i}`;
    const claims: Record<string, unknown> = {
      iss: urls[provider],
      aud: ID_TOKEN_CLIENT,
      iat: now,
      exp: now + 7 * 86400,
      sub: `fz-${tag}-${r.int(1e9)}`,
      email: emailish(r, tag),
      email_verified: r.chance(0.7),
      name: "Fuzz User",
    };
    for (let k = r.range(1, 3); k > 0; k--) {
      if (r.chance(0.15)) {
        claims[`${r.pick(UNICODE_EDGES)}${r.pick(CLAIMS)}`] = hostileValue(r, tag);
      } else claims[r.pick(CLAIMS)] = hostileValue(r, tag);
    }
    out.push({ provider, token: await issuer.sign(claims) });
  }
  return out;
}
