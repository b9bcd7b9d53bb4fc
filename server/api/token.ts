/**
 * POST /token?grant_type=...: the grant types are the `GRANTS` table below,
 * in the order the unsupported_grant_type answer names them: `password`
 * (e-mail or phone), `refresh_token`, `pkce` (the code of a PKCE flow,
 * auth/pkce.ts) and `id_token` (a native app's ID token, id_token.ts).
 */
import { refreshGrant, signInWithAuthCode, signInWithPassword } from "../auth/sign_in.ts";
import type { TokenSet } from "../auth/sessions.ts";
import { idTokenGrant } from "./id_token.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { ApiError, badRequest } from "./errors.ts";
import { type Body, optString, readBody } from "./input.ts";
import { tokenSetResponse } from "./headers.ts";
import { requestMeta } from "./meta.ts";

/** Handles one grant type; answers with a Response (usually `c.json(tokenSet)`). */
export type GrantHandler = (c: Ctx, body: Body, s: Services) => Promise<Response>;

/** The password grant: (email | phone) + password. */
export async function passwordGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  const email = optString(body, "email", 320);
  const phone = optString(body, "phone", 64);
  const password = optString(body, "password", 1024);
  if (email && phone) {
    throw badRequest("Only an email address or phone number should be provided on login.");
  }
  if (!email && !phone) throw badRequest("missing email or phone");
  if (!password) throw badRequest("password is required");
  const set = await signInWithPassword(
    s,
    { email, phone, password, roles: c.env?.signInRoles },
    requestMeta(c),
  );
  return tokenSetResponse(c, set);
}

/** The refresh_token grant: rotation and reuse detection live in Sessions.refresh. */
export async function refreshTokenGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  return tokenSetResponse(c, await refreshTokenSet(body, s, clientIp(c)));
}

/** The refresh_token grant's token set for request body `body` from client `ip`. */
export async function refreshTokenSet(body: Body, s: Services, ip: string): Promise<TokenSet> {
  const token = optString(body, "refresh_token", 512);
  if (!token) throw badRequest("refresh_token is required");
  return await refreshGrant(s, token, ip);
}

/** The pkce grant: `auth_code` and `code_verifier` of a PKCE flow (auth/pkce.ts). */
export async function pkceGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  const set = await signInWithAuthCode(
    s,
    optString(body, "auth_code", 256) ?? "",
    optString(body, "code_verifier", 256) ?? "",
    requestMeta(c),
  );
  return tokenSetResponse(c, set);
}

/** Every grant type of POST /token. */
export const GRANTS: ReadonlyMap<string, GrantHandler> = new Map([
  ["password", passwordGrant],
  ["refresh_token", refreshTokenGrant],
  ["pkce", pkceGrant],
  ["id_token", idTokenGrant],
]);

/** POST /token. */
export async function token(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const grantType = c.req.query("grant_type") ??
    (typeof body.grant_type === "string" ? body.grant_type : "");
  if (grantType === "web3") {
    // Web3 sign-in is a GoTrue feature we do not have: answer as GoTrue does with it off
    // (web3.go, before reading the body).
    throw new ApiError(422, "web3_provider_disabled", "Web3 provider is disabled");
  }
  const table = GRANTS;
  const handler = table.get(grantType);
  if (!handler) {
    throw new ApiError(
      400,
      "unsupported_grant_type",
      grantType
        ? `unsupported_grant_type: grant_type "${grantType.slice(0, 64)}" is not one of ${
          [...table.keys()].join(", ")
        }`
        : `unsupported_grant_type: grant_type is required (one of ${[...table.keys()].join(", ")})`,
    );
  }
  return await handler(c, body, s);
}
