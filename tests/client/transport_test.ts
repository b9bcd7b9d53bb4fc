/**
 * The transport under the client in Deno: tls_client_auth with a client
 * certificate over real mutual TLS (a Node https server that requires and
 * verifies it), and a proxy through Deno.createHttpClient.
 */
import assert from "node:assert/strict";
import { Client, ConnectionError } from "../../mod.ts";
import { json, startStub } from "./_stub.ts";

const tls = (name: string) =>
  Deno.readTextFileSync(new URL(`./fixtures/tls/${name}`, import.meta.url));

async function startMtlsServer(): Promise<{ url: string; close(): Promise<void> }> {
  const child = new Deno.Command("node", {
    args: [new URL("./fixtures/mtls_server.mjs", import.meta.url).pathname],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the mTLS server exited before listening");
    text += value;
  }
  const port = Number(text.trim());
  return {
    url: `https://127.0.0.1:${port}`,
    close: async () => {
      await child.stdin.close();
      await reader.cancel();
      await child.status;
    },
  };
}

Deno.test("tls_client_auth: client id in the body, certificate on the TLS connection", async () => {
  const server = await startMtlsServer();
  try {
    const client = new Client("tls-client-1", "", {
      site: server.url,
      authScheme: "tls_client_auth",
      connectionOpts: { cert: tls("client.pem"), key: tls("client.key"), caCerts: [tls("ca.pem")] },
    });
    try {
      const token = await client.clientCredentials.getToken();
      assert.equal(token.token, "mtls-token-for-tls-client-1");
      assert.equal(token.params.client_id, "tls-client-1");
      assert.equal(token.params.had_secret, false);
      const inspected = Deno.inspect(client, { depth: 5 });
      assert.ok(
        !inspected.includes(tls("client.key").split("\n")[1]),
        "the private key is not shown",
      );
    } finally {
      client.close();
    }

    const noCert = new Client("tls-client-1", "", {
      site: server.url,
      authScheme: "tls_client_auth",
      connectionOpts: { caCerts: [tls("ca.pem")] },
    });
    try {
      await assert.rejects(noCert.clientCredentials.getToken(), (e: unknown) => {
        assert.ok(e instanceof ConnectionError);
        assert.equal(e.kind, "network");
        assert.ok(e.message.includes(`${server.url}/oauth/token`));
        return true;
      });
    } finally {
      noCert.close();
    }
  } finally {
    await server.close();
  }
});

Deno.test("connectionOpts.proxy sends requests through the proxy", async () => {
  await using proxy = startStub((req) => json({ access_token: "via-proxy", seen: req.url.href }));
  const client = new Client("id", "secret-value-123", {
    site: "http://provider.invalid",
    connectionOpts: { proxy: proxy.url },
  });
  try {
    const token = await client.clientCredentials.getToken();
    assert.equal(token.token, "via-proxy");
    assert.equal(token.params.seen, "http://provider.invalid/oauth/token");
    assert.equal(proxy.requests.length, 1);
  } finally {
    client.close();
  }
});
