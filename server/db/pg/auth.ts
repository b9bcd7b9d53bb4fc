/**
 * Authentication at startup: the exchange the server asks for (a clear-text password, MD5, or
 * SCRAM-SHA-256 after RFC 5802 and RFC 7677) and the policy of which of them may be used
 * (`require_auth`, or the default). SCRAM also checks the server's signature, so a server that
 * does not know the password cannot pass as the real one.
 */
import { Buffer } from "node:buffer";
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { PgConnectionError } from "./errors.ts";
import { type AuthMethod, type ConnectOptions, where } from "./options.ts";
import type { TlsState } from "./tls.ts";
import * as wire from "./wire.ts";

/**
 * The SCRAM iteration count at most: 24 times PostgreSQL's default (4096, `scram_iterations`),
 * computed off the event loop (WebCrypto). A server asking for
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

/**
 * One connection's authentication, as the server asks and `require_auth` allows.
 * AuthenticationOk counts only once a SCRAM exchange that began has ended with the server's
 * signature verified: a server that does not know the password cannot skip its proof.
 */
export class Authentication {
  readonly #opts: ConnectOptions;
  readonly #tls: TlsState;
  #scram: Scram | null = null;
  /** SCRAM progress: 0 not begun, 1 first message sent, 2 final message sent, 3 server verified. */
  #scramStep = 0;
  /** The password method the server asked for and got ("none" until one is asked). */
  #method: AuthMethod = "none";

  constructor(opts: ConnectOptions, tls: TlsState) {
    this.#opts = opts;
    this.#tls = tls;
  }

  /**
   * Takes one Authentication* message (its body is `buf[start, end)`). Returns true when it wrote
   * an answer to `w` to be sent now, false when there is none, or the answer (a SASLResponse's
   * body) once SCRAM's key is derived off the event loop. Throws PgConnectionError when the
   * exchange cannot go on; the answer's promise rejects with whatever SCRAM refused.
   */
  message(
    buf: Uint8Array,
    view: DataView,
    start: number,
    end: number,
    w: wire.Writer,
  ): boolean | Promise<Uint8Array> {
    const code = view.getInt32(start);
    const opts = this.#opts;
    const { user, password } = opts;
    const need = (what: string) => {
      if (!password) {
        throw new PgConnectionError(
          "AUTH_FAILED",
          `PostgreSQL asks for a ${what} password for user "${user}" and DATABASE_URL has none`,
        );
      }
    };
    const text = () => new TextDecoder().decode(buf.subarray(start + 4, end));
    switch (code) {
      case 0: // AuthenticationOk
        if (end - start !== 4) throw malformedAuth();
        if (this.#scramStep === 1 || this.#scramStep === 2) {
          throw new PgConnectionError(
            "AUTH_FAILED",
            `PostgreSQL at ${where(opts)} accepted the connection before completing ` +
              `SCRAM-SHA-256: the server did not prove that it knows the password`,
          );
        }
        if (this.#method === "none") this.#allow("none");
        return false;
      case 3: // clear text
        if (end - start !== 4) throw malformedAuth();
        this.#allow("password");
        need("clear-text");
        wire.passwordMessage(w, password);
        return true;
      case 5: // MD5 with a 4-byte salt
        if (end - start !== 8) throw malformedAuth();
        this.#allow("md5");
        need("MD5");
        wire.passwordMessage(w, md5Password(user, password, buf.slice(start + 4, start + 8)));
        return true;
      case 10: { // SASL: a list of mechanisms
        if (this.#scramStep !== 0 || this.#method !== "none") throw outOfOrder("SASL");
        const mechanisms: string[] = [];
        let at = start + 4;
        while (at < end && buf[at] !== 0) {
          const [m, next] = wire.cstringAt(buf, at, end);
          mechanisms.push(m);
          at = next;
        }
        if (at !== end - 1) throw malformedAuth();
        if (!mechanisms.includes("SCRAM-SHA-256")) {
          throw new PgConnectionError(
            "AUTH_FAILED",
            `PostgreSQL offers only ${mechanisms.join(", ")}; SCRAM-SHA-256 is supported`,
          );
        }
        this.#allow("scram-sha-256");
        need("SCRAM-SHA-256");
        this.#scram = new Scram(password);
        wire.saslInitial(w, "SCRAM-SHA-256", this.#scram.first());
        this.#scramStep = 1;
        return true;
      }
      case 11: // SASLContinue: the server-first-message; the key is derived off the event loop
        if (this.#scramStep !== 1) throw outOfOrder("SASLContinue");
        this.#scramStep = 2;
        return this.#scram!.final(text()).then((answer) => new TextEncoder().encode(answer));
      case 12: // SASLFinal
        if (this.#scramStep !== 2) throw outOfOrder("SASLFinal");
        this.#scram!.verify(text());
        this.#scram = null;
        this.#scramStep = 3;
        return false;
      default:
        throw new PgConnectionError(
          "AUTH_FAILED",
          `PostgreSQL asks for an authentication method this client does not support (${code})`,
        );
    }
  }

  /**
   * Throws unless `method` may be used: as `require_auth` says, else SCRAM-SHA-256 or none
   * anywhere, and a clear-text or MD5 password only over a Unix socket or verified TLS.
   */
  #allow(method: AuthMethod): void {
    const opts = this.#opts;
    if (method !== "none") this.#method = method;
    const ra = opts.requireAuth;
    const ok = ra
      ? ra.methods.has(method) !== ra.negated
      : (method !== "password" && method !== "md5") || this.#tls === "verified" ||
        opts.host.startsWith("/");
    if (ok) return;
    const asked = {
      none: "accepted the connection without authentication",
      password: "asks for a clear-text password",
      md5: "asks for an MD5 password",
      "scram-sha-256": "asks for SCRAM-SHA-256",
      gss: "asks for GSSAPI",
      sspi: "asks for SSPI",
    }[method];
    const why = ra
      ? `require_auth does not allow "${method}"`
      : `${method === "md5" ? "an MD5" : "a clear-text"} password is sent only over a Unix ` +
        `socket or TLS with a verified certificate (sslmode=verify-ca or verify-full); ` +
        `require_auth=${method} allows it anyway`;
    throw new PgConnectionError(
      "AUTH_NOT_ALLOWED",
      `PostgreSQL at ${where(opts)} ${asked}: refused, ${why}`,
    );
  }
}

function malformedAuth(): PgConnectionError {
  return new PgConnectionError(
    "PROTOCOL_ERROR",
    "PostgreSQL sent a malformed authentication message",
  );
}

function outOfOrder(what: string): PgConnectionError {
  return new PgConnectionError(
    "PROTOCOL_ERROR",
    `PostgreSQL sent ${what} out of order during authentication`,
  );
}
