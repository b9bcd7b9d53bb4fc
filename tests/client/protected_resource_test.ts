/**
 * Protected resource metadata (RFC 9728). oidc-provider does not serve it,
 * so a stub resource does, as §3 and §5 document: the well-known URL with
 * the resource's path inserted, and a 401 naming `resource_metadata`.
 */
import assert from "node:assert/strict";
import { Client, OAuthError } from "../../mod.ts";
import { discoverProtectedResource, resourceMetadataUrl } from "../../oidc.ts";
import { json, startStub } from "./_stub.ts";

Deno.test("RFC 9728: well-known URL, the resource check, the WWW-Authenticate pointer", async () => {
  let lie = false;
  await using rs = startStub((req) => {
    const path = req.url.pathname;
    if (path === "/.well-known/oauth-protected-resource/v1/orders") {
      return json({
        resource: lie ? "https://evil.example/v1/orders" : `${rs.url}/v1/orders`,
        authorization_servers: ["https://id.example.test"],
        scopes_supported: ["orders:read"],
        bearer_methods_supported: ["header"],
        dpop_bound_access_tokens_required: true,
      });
    }
    if (path === "/v1/orders") {
      return json({ error: "invalid_token" }, 401, {
        "www-authenticate":
          `Bearer error="invalid_token", resource_metadata="${rs.url}/.well-known/oauth-protected-resource/v1/orders"`,
      });
    }
    return json({ error: "not_found" }, 404);
  });
  const resource = `${rs.url}/v1/orders`;

  const md = await discoverProtectedResource(resource);
  assert.deepEqual(md.authorization_servers, ["https://id.example.test"]);
  assert.equal(md.dpop_bound_access_tokens_required, true);
  assert.equal(rs.last().url.pathname, "/.well-known/oauth-protected-resource/v1/orders");
  assert.equal(rs.last().headers.get("accept"), "application/json");

  // from a 401 challenge, through a client's transport
  const challenge = await fetch(resource);
  await challenge.body?.cancel();
  const pointer = resourceMetadataUrl(challenge);
  assert.equal(pointer, `${rs.url}/.well-known/oauth-protected-resource/v1/orders`);
  const client = new Client("app", "s", { site: rs.url });
  const again = await discoverProtectedResource(resource, { client, metadataUrl: pointer });
  assert.equal(again.resource, resource);

  // metadata naming another resource is refused (RFC 9728 §3.3)
  lie = true;
  await assert.rejects(
    discoverProtectedResource(resource),
    (e: unknown) =>
      e instanceof OAuthError && e.code === "invalid_resource_metadata" &&
      /evil\.example/.test(e.description!),
  );
  await assert.rejects(
    discoverProtectedResource(`${rs.url}/nothing`),
    (e: unknown) => e instanceof OAuthError && /status 404/.test(e.description!),
  );
  await assert.rejects(discoverProtectedResource(`${resource}#frag`), TypeError);
  assert.equal(resourceMetadataUrl('Bearer realm="x"'), undefined);
});
