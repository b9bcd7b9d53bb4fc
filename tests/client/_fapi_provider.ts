/**
 * oidc-provider (npm; OpenID Certified for the FAPI 2.0 profiles) with its
 * FAPI 2.0 Security Profile on, behind a TLS front that asks for client
 * certificates (tests/client/fixtures/mtls_front.mjs), so that
 * `tls_client_auth` and certificate-bound tokens (RFC 8705) work on
 * loopback. The issuer is `https://127.0.0.1:<port>`; a fresh PKI is made
 * for each provider (tests/client/_pki.ts).
 */
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { OidcProvider } from "../helpers/deps.ts";
import { driveLogin, type LoginResult } from "../helpers/oidc_provider.ts";
import { makePki, type Pki } from "./_pki.ts";

/** Options of {@linkcode startFapiProvider}. */
export interface FapiProviderOptions {
  /** Registered clients (RFC 7591 names). */
  clients: Record<string, unknown>[];
  /** Client certificate common names to issue (their keys are in `pki.clients`). */
  certificates?: string[];
  /** The FAPI profile: "2.0" (default) or off (`null`), for the non-FAPI features. */
  fapi?: "2.0" | null;
  /** Require PAR for every client; default true. */
  requirePar?: boolean;
  /** Extra features merged into the defaults. */
  features?: Record<string, unknown>;
  /** Merged last into the configuration. */
  configuration?: Record<string, unknown>;
  /** Reuse a PKI (a second provider for the mix-up test). */
  pki?: Pki;
}

/** A running FAPI provider. */
export interface FapiProvider {
  issuer: string;
  provider: InstanceType<typeof OidcProvider>;
  pki: Pki;
  /** A fetch that trusts the test CA (the user's browser). */
  browserFetch: typeof fetch;
  /** Completes login and consent; returns the callback. */
  login(authorizeUrl: string, redirectUri?: string): Promise<LoginResult>;
  /** TLS options for a client with the certificate `name` (or none). */
  tls(name?: string): { cert?: string; key?: string; caCerts: string[] };
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The provider's own signing key (ES256: FAPI 2.0 allows PS256, ES256, EdDSA). */
async function providerJwks(): Promise<{ keys: JsonWebKey[] }> {
  const pair = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  return {
    keys: [
      {
        ...jwk,
        kid: `op-${crypto.randomUUID().slice(0, 8)}`,
        alg: "ES256",
        use: "sig",
      } as JsonWebKey,
    ],
  };
}

async function startFront(pki: Pki, upstreamPort: number) {
  const child = new Deno.Command("node", {
    args: [
      new URL("./fixtures/mtls_front.mjs", import.meta.url).pathname,
      `${pki.dir}/server.key`,
      `${pki.dir}/server.pem`,
      `${pki.dir}/ca.pem`,
      String(upstreamPort),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the TLS front exited before listening");
    text += value;
  }
  return {
    port: Number(text.trim()),
    close: async () => {
      await child.stdin.close();
      await reader.cancel();
      await child.status;
    },
  };
}

/** Starts oidc-provider with FAPI 2.0 behind a TLS front on 127.0.0.1. */
export async function startFapiProvider(options: FapiProviderOptions): Promise<FapiProvider> {
  const ownPki = !options.pki;
  const pki = options.pki ?? await makePki(options.certificates ?? []);
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const front = await startFront(pki, (server.address() as AddressInfo).port);
  const issuer = `https://127.0.0.1:${front.port}`;
  const fapi = options.fapi === undefined ? "2.0" : options.fapi;
  const header = (ctx: { get(name: string): string }, name: string) => ctx.get(name) || undefined;
  const provider = new OidcProvider(issuer, {
    clients: options.clients,
    clientAuthMethods: ["private_key_jwt", "tls_client_auth", "client_secret_basic"],
    scopes: ["openid", "offline_access", "profile", "email", "api:read"],
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    cookies: { keys: ["fapi-cookie-key-1"] },
    jwks: await providerJwks(),
    pkce: { required: () => true },
    features: {
      fapi: { enabled: fapi !== null, profile: fapi ?? "2.0" },
      pushedAuthorizationRequests: {
        enabled: true,
        requirePushedAuthorizationRequests: options.requirePar ?? true,
      },
      dPoP: { enabled: true, nonceSecret: Buffer.alloc(32, 7), requireNonce: () => true },
      mTLS: {
        enabled: true,
        certificateBoundAccessTokens: true,
        tlsClientAuth: true,
        getCertificate: (ctx: { get(name: string): string }) => {
          const pem = header(ctx, "x-client-cert");
          return pem ? decodeURIComponent(pem) : undefined;
        },
        certificateAuthorized: (ctx: { get(name: string): string }) =>
          header(ctx, "x-client-cert-verified") === "SUCCESS",
        certificateSubjectMatches: (
          ctx: { get(name: string): string },
          property: string,
          expected: string,
        ) => {
          const pem = header(ctx, "x-client-cert");
          if (!pem || property !== "tls_client_auth_subject_dn") return false;
          return new X509Certificate(decodeURIComponent(pem)).subject === expected;
        },
      },
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      userinfo: { enabled: true },
      ...options.features,
    },
    ttl: {
      AccessToken: 600,
      ClientCredentials: 600,
      RefreshToken: 3600,
      IdToken: 600,
      Interaction: 600,
      Session: 600,
      Grant: 3600,
      AuthorizationCode: 60,
      PushedAuthorizationRequest: 60,
      BackchannelAuthenticationRequest: 600,
    },
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(g: string): boolean }) =>
      client.grantTypeAllowed("refresh_token"),
    findAccount: (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.test`, email_verified: true, name: sub }),
    }),
    ...options.configuration,
  });
  (provider as unknown as { proxy: boolean }).proxy = true;
  handler = provider.callback();
  const browser = Deno.createHttpClient({ caCerts: [pki.ca] });
  const browserFetch: typeof fetch = (input, init) => fetch(input, { ...init, client: browser });
  const close = async () => {
    browser.close();
    await front.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    if (ownPki) await pki.remove();
  };
  return {
    issuer,
    provider,
    pki,
    browserFetch,
    login: (url, redirectUri) => driveLogin(url, { fetch: browserFetch, redirectUri }),
    tls: (name) => ({
      ...(name ? pki.clients[name] : {}),
      caCerts: [pki.ca],
    }),
    close,
    [Symbol.asyncDispose]: close,
  };
}
