/**
 * Password authentication: MD5 and SCRAM-SHA-256 (RFC 5802, RFC 7677), the
 * two the server may ask for besides a clear-text password. SCRAM also checks
 * the server's signature, so a server that does not know the password cannot
 * pass as the real one.
 */
import { Buffer } from "node:buffer";
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The SCRAM iteration count at most: 24 times PostgreSQL's default (4096, `scram_iterations`),
 * about 40 ms of one core here, computed off the event loop (WebCrypto). A server asking for
 * more is refused (a hostile server would otherwise make each connect cost seconds of CPU).
 */
export const MAX_SCRAM_ITERATIONS = 100_000;

/** The MD5 answer: "md5" + md5(md5(password + user) + salt), in hex. */
export function md5Password(user: string, password: string, salt: Uint8Array): string {
  const inner = createHash("md5").update(password + user).digest("hex");
  return "md5" + createHash("md5").update(inner).update(salt).digest("hex");
}

/** One SCRAM-SHA-256 exchange. */
export class Scram {
  readonly #nonce = randomBytes(18).toString("base64");
  readonly #password: string;
  #clientFirstBare = "";
  #expectedServerSignature: Uint8Array | null = null;

  constructor(password: string) {
    this.#password = password;
  }

  /** client-first-message (the server takes the user name from the startup message). */
  first(): string {
    this.#clientFirstBare = `n=*,r=${this.#nonce}`;
    return `n,,${this.#clientFirstBare}`;
  }

  /** client-final-message for the server-first-message `serverFirst`. */
  async final(serverFirst: string): Promise<string> {
    const attrs = scramAttributes(serverFirst);
    const nonce = attrs.get("r") ?? "";
    const salt = attrs.get("s");
    const iterations = Number(attrs.get("i"));
    if (!nonce.startsWith(this.#nonce) || nonce.length === this.#nonce.length) {
      throw new Error("SCRAM: the server's nonce does not extend ours");
    }
    if (!salt || !Number.isInteger(iterations) || iterations < 1) {
      throw new Error("SCRAM: the server's first message lacks a salt or an iteration count");
    }
    if (iterations > MAX_SCRAM_ITERATIONS) {
      throw new Error(
        `SCRAM: the server asks for ${iterations} iterations, more than the ` +
          `${MAX_SCRAM_ITERATIONS} this client computes`,
      );
    }
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(this.#password.normalize("NFKC")),
      "PBKDF2",
      false,
      ["deriveBits"],
    );
    const salted = new Uint8Array(
      await crypto.subtle.deriveBits(
        { name: "PBKDF2", hash: "SHA-256", salt: Buffer.from(salt, "base64"), iterations },
        key,
        256,
      ),
    );
    const clientKey = hmac(salted, "Client Key");
    const storedKey = createHash("sha256").update(clientKey).digest();
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.#clientFirstBare},${serverFirst},${withoutProof}`;
    const signature = hmac(storedKey, authMessage);
    const proof = Buffer.alloc(clientKey.length);
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i] ^ signature[i];
    this.#expectedServerSignature = hmac(hmac(salted, "Server Key"), authMessage);
    return `${withoutProof},p=${proof.toString("base64")}`;
  }

  /** Checks the server-final-message; throws when the server did not prove it knows the password. */
  verify(serverFinal: string): void {
    const attrs = scramAttributes(serverFinal);
    if (attrs.has("e")) throw new Error(`SCRAM: the server refused: ${attrs.get("e")}`);
    const v = Buffer.from(attrs.get("v") ?? "", "base64");
    const expected = this.#expectedServerSignature;
    if (!expected || v.length !== expected.length || !timingSafeEqual(v, expected)) {
      throw new Error("SCRAM: the server's signature is wrong");
    }
  }
}

function hmac(key: Uint8Array, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

function scramAttributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) out.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return out;
}
