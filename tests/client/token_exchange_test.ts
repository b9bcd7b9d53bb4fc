/**
 * Token exchange (RFC 8693) through `exchangeToken`. oidc-provider has no
 * token exchange grant, so a stub token endpoint plays the authorization
 * server and checks the request as RFC 8693 §2.1 documents it.
 */
import assert from "node:assert/strict";
import { Client, OAuthError } from "../../mod.ts";
import { exchangeToken, TOKEN_EXCHANGE_GRANT } from "../../oidc.ts";
import { json, recordingLogger, type SeenRequest, startStub } from "./_stub.ts";

const ACCESS = "urn:ietf:params:oauth:token-type:access_token";
const JWT = "urn:ietf:params:oauth:token-type:jwt";

/** Answers as RFC 8693 §2.2 says, after checking the request of §2.1. */
function tokenEndpoint(req: SeenRequest): Response {
  const f = req.form;
  const problems: string[] = [];
  if (req.headers.get("content-type") !== "application/x-www-form-urlencoded") {
    problems.push("not form-encoded");
  }
  if (f.get("grant_type") !== TOKEN_EXCHANGE_GRANT) problems.push("grant_type");
  if (!f.get("subject_token") || !f.get("subject_token_type")) problems.push("subject");
  if (f.has("actor_token") !== f.has("actor_token_type")) problems.push("actor");
  if (!/^Basic /.test(req.headers.get("authorization") ?? "")) problems.push("client auth");
  if (problems.length) {
    return json({ error: "invalid_request", error_description: problems.join(", ") }, 400);
  }
  if (f.get("subject_token") === "revoked-subject") {
    return json({ error: "invalid_grant", error_description: "subject token revoked" }, 400);
  }
  if (f.get("requested_token_type") === "legacy-without-type") {
    return json({ access_token: "x-123456789", token_type: "Bearer" });
  }
  return json({
    access_token: `exchanged-for-${f.getAll("audience").join("+") || "default"}`,
    issued_token_type: f.get("requested_token_type") ?? ACCESS,
    token_type: "Bearer",
    expires_in: 300,
    scope: f.get("scope") ?? undefined,
  });
}

Deno.test("token exchange: the documented request, the issued token", async () => {
  await using stub = startStub(tokenEndpoint);
  const client = new Client("gateway", "gw-secret-1234", { site: stub.url });
  const token = await exchangeToken(client, {
    subjectToken: "user-access-token-abcdef",
    subjectTokenType: ACCESS,
    actorToken: "service-jwt-abcdef",
    actorTokenType: JWT,
    requestedTokenType: ACCESS,
    audience: ["orders", "billing"],
    resource: "https://orders.example.test/v1",
    scope: "orders:read",
  });
  assert.equal(token.token, "exchanged-for-orders+billing");
  assert.equal(token.params.issued_token_type, ACCESS);
  assert.equal(token.params.scope, "orders:read");
  assert.ok(token.expiresAt);
  const f = stub.last().form;
  assert.deepEqual(f.getAll("audience"), ["orders", "billing"], "several audiences repeat the key");
  assert.equal(f.get("resource"), "https://orders.example.test/v1");
  assert.equal(f.get("actor_token_type"), JWT);
  assert.ok(!f.has("client_secret"), "the secret goes in the Basic header");
});

Deno.test("token exchange: refusals and a response without issued_token_type", async () => {
  await using stub = startStub(tokenEndpoint);
  const logger = recordingLogger();
  const client = new Client("gateway", "gw-secret-1234", { site: stub.url, logger, debug: true });
  await assert.rejects(
    exchangeToken(client, { subjectToken: "revoked-subject", subjectTokenType: ACCESS }),
    (e: unknown) => e instanceof OAuthError && e.code === "invalid_grant",
  );
  await assert.rejects(
    exchangeToken(client, {
      subjectToken: "s-123456789",
      subjectTokenType: ACCESS,
      requestedTokenType: "legacy-without-type",
    }),
    (e: unknown) =>
      e instanceof OAuthError && e.code === "invalid_token_response" &&
      /issued_token_type/.test(e.description!),
  );
  await assert.rejects(
    exchangeToken(client, { subjectToken: "", subjectTokenType: ACCESS }),
    TypeError,
  );
  await assert.rejects(
    exchangeToken(client, { subjectToken: "s", subjectTokenType: ACCESS, actorToken: "a" }),
    /actorTokenType/,
  );
  assert.ok(
    !logger.lines.join("\n").includes("revoked-subject"),
    "the subject token is redacted from the debug log",
  );
});
