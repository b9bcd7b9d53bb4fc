/**
 * A test CA and a certificate for "localhost" signed by it, made by openssl
 * in `dir`: ca.crt, server.crt, server.key. Clients trust ca.crt (rustls
 * refuses a self-signed CA certificate used as the server's own).
 */

async function openssl(args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

/** The files' paths, all in `dir`. */
export interface LocalhostCertificate {
  ca: string;
  cert: string;
  key: string;
}

export async function localhostCertificate(dir: string): Promise<LocalhostCertificate> {
  await openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA"]
      .concat(["-keyout", "ca.key", "-out", "ca.crt"]),
    dir,
  );
  await openssl(
    ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost"]
      .concat(["-keyout", "server.key", "-out", "server.csr"]),
    dir,
  );
  await Deno.writeTextFile(`${dir}/ext.cnf`, "subjectAltName=DNS:localhost\n");
  await openssl(
    ["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key"]
      .concat(["-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.crt"]),
    dir,
  );
  return { ca: `${dir}/ca.crt`, cert: `${dir}/server.crt`, key: `${dir}/server.key` };
}
