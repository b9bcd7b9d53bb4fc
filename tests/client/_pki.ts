/**
 * Test certificates made with openssl for each run: a CA, a server
 * certificate for 127.0.0.1 and client certificates (P-256 keys, valid for
 * a day), for mutual TLS (RFC 8705) against a provider on loopback.
 */

/** A certificate and its private key (PKCS#8), both PEM. */
export interface KeyPair {
  cert: string;
  key: string;
}

/** The certificates of one test run. */
export interface Pki {
  /** The CA certificate (PEM): trust it to reach the server. */
  ca: string;
  /** The server's certificate for 127.0.0.1. */
  server: KeyPair;
  /** Client certificates by common name. */
  clients: Record<string, KeyPair>;
  /** Where the PEM files are (ca.pem, server.pem, server.key). */
  dir: string;
  /** Removes the files. */
  remove(): Promise<void>;
}

async function openssl(cwd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

async function issue(dir: string, name: string, subject: string, ext: string): Promise<KeyPair> {
  await openssl(dir, [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  ]);
  await Deno.writeTextFile(`${dir}/${name}.ext`, ext);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "1",
    "-out",
    `${name}.pem`,
    "-extfile",
    `${name}.ext`,
  ]);
  return {
    cert: await Deno.readTextFile(`${dir}/${name}.pem`),
    key: await Deno.readTextFile(`${dir}/${name}.key`),
  };
}

/** Makes a CA, a server certificate for 127.0.0.1 and one client certificate per name (its CN). */
export async function makePki(clientNames: string[]): Promise<Pki> {
  const dir = await Deno.makeTempDir({ prefix: "oauth2-pki-" });
  await openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    "/CN=oauth2 test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  const server = await issue(
    dir,
    "server",
    "/CN=127.0.0.1",
    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
  );
  const clients: Record<string, KeyPair> = {};
  for (const name of clientNames) {
    clients[name] = await issue(
      dir,
      `client-${name}`,
      `/CN=${name}`,
      "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n",
    );
  }
  return {
    ca: await Deno.readTextFile(`${dir}/ca.pem`),
    server,
    clients,
    dir,
    remove: () => Deno.remove(dir, { recursive: true }),
  };
}
