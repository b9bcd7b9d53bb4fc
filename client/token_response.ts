/**
 * The token response of a token request: sent with the client's
 * authentication, parsed, and checked as every grant needs (an error body,
 * a body that is no record, a sender constraint that is missing). The error
 * classes load only when a check fails.
 * @module
 */
import type { BaseClient } from "./base_client.ts";
import { provenWithDpop, transportOf } from "./internal.ts";
import type { TokenParams } from "./options.ts";
import { hashOf, parseBody } from "./parse.ts";
import { tokenRequest } from "./token_request.ts";
import type { Answer } from "./transport.ts";

const SECRET_PARAMS = new Set([
  "password",
  "code",
  "refresh_token",
  "code_verifier",
  "assertion",
  "device_code",
  "auth_req_id",
  "subject_token",
  "actor_token",
]);

const NO_SECRETS: readonly string[] = [];

/** Secret wire values of a token request (password, code ...), for redaction. */
export function tokenSecrets(params: TokenParams): readonly string[] {
  let out: string[] | undefined;
  for (const k in params) {
    const v = params[k];
    if (typeof v === "string" && SECRET_PARAMS.has(k)) (out ??= []).push(v);
  }
  return out ?? NO_SECRETS;
}

/** Sends a token request with `params` to the client's token endpoint. */
export function tokenAnswer(client: BaseClient, params: TokenParams): Promise<Answer> {
  const transport = transportOf(client)!;
  const secrets = tokenSecrets(params);
  return tokenRequest(
    client,
    client.tokenUrl(),
    params,
    (verb, url, opts) => transport.exchange(verb, url, opts, secrets, true),
  );
}

/**
 * The body of a token response as a record of the caller's own; or, when
 * the provider answered with an error or with a body that is no record,
 * what the `OAuthError` must say (`tokenError` builds it: the error classes
 * load then). `""`: the provider's own error.
 */
export function tokenHash(
  answer: Answer,
  params: TokenParams,
): Record<string, unknown> | string {
  const { response, text } = answer;
  const raw = parseBody(text, response, params.parse);
  const hash = hashOf(raw, params.snaky, true);
  if (response.status >= 400 || (hash && typeof hash.error === "string")) return "";
  return hash ?? "the token response is neither a JSON object nor form-encoded";
}

/**
 * The `OAuthError` of a token response: the provider's error, or with
 * `description` (and `code`, default `invalid_token_response`) the library's.
 */
export async function tokenError(
  answer: Answer,
  params: TokenParams,
  description?: string,
  code = description ? "invalid_token_response" : undefined,
): Promise<Error> {
  const [{ OAuthError }, { OAuthResponse }] = await Promise.all([
    import("./error.ts"),
    import("./response.ts"),
  ]);
  const response = new OAuthResponse(answer.response, answer.text, {
    parse: params.parse,
    snaky: params.snaky,
    snakyHashClass: params.snakyHashClass,
  });
  return new OAuthError(response, { code, description, secrets: answer.secrets });
}

/**
 * Why the token is refused for its `token_type` (`invalid_token_type`), when
 * it must be sender-constrained and is not: a token requested with a DPoP
 * proof must be a DPoP token (RFC 9449 §5); under the FAPI 2.0 profile every
 * token is sender-constrained: DPoP, or a Bearer token bound to the client's
 * TLS certificate (RFC 8705 §3).
 */
export function unconstrained(
  client: BaseClient,
  answer: Answer,
  tokenType: unknown,
): string | undefined {
  const proven = provenWithDpop.has(answer.response);
  if (!proven && client.options.profile !== "fapi2") return undefined;
  const type = typeof tokenType === "string" ? tokenType.toLowerCase() : undefined;
  const got = JSON.stringify(tokenType);
  if (proven) {
    return type === "dpop"
      ? undefined
      : `the token request carried a DPoP proof, but the token_type is ${got}, not DPoP`;
  }
  const conn = client.options.connectionOpts;
  return type === "dpop" || (conn.cert && conn.key && type === "bearer")
    ? undefined
    : `FAPI 2.0 needs a sender-constrained token: DPoP, or Bearer with a TLS client ` +
      `certificate; got token_type ${got}`;
}
