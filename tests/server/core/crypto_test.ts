/**
 * The hashes every stored token, code and derived refresh token depends on: the values WebCrypto
 * gives for the same UTF-8 text (what rows written before stay findable by) and the published
 * test vectors.
 */
import assert from "node:assert/strict";
import {
  hmacBase64url,
  hmacHex,
  hmacKey,
  sha256Base64url,
  sha256Hex,
} from "../../../server/util/crypto.ts";

const enc = new TextEncoder();
const hex = (b: ArrayBuffer) =>
  Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
const b64url = (b: ArrayBuffer) =>
  btoa(String.fromCharCode(...new Uint8Array(b))).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");

// ASCII, accents, an emoji, an empty string, a long token, and lone surrogates (which
// TextEncoder writes as U+FFFD).
const TEXTS = ["abc", "", "zoë ü €", "😀 ok", "x".repeat(1000), "a\ud800b", "\udfff"];

Deno.test("sha256Hex and sha256Base64url: the published vector and WebCrypto's digest of the UTF-8 text", async () => {
  assert.equal(
    sha256Hex("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(sha256Base64url("abc"), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  for (const t of TEXTS) {
    const d = await crypto.subtle.digest("SHA-256", enc.encode(t));
    assert.equal(sha256Hex(t), hex(d), t);
    assert.equal(sha256Base64url(t), b64url(d), t);
  }
});

Deno.test("hmacBase64url and hmacHex: RFC 4231 and WebCrypto's HMAC-SHA256 of the UTF-8 text", async () => {
  // RFC 4231, test case 2
  assert.equal(
    hmacHex(hmacKey("Jefe"), "what do ya want for nothing?"),
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
  // RFC 4231, test case 6: a key longer than the block
  assert.equal(
    hmacHex(
      hmacKey(new Uint8Array(131).fill(0xaa)),
      "Test Using Larger Than Block-Size Key - Hash Key First",
    ),
    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
  );
  // keys shorter than, exactly and longer than SHA-256's 64-byte block (hashed first)
  for (
    const secret of [
      "refresh-token-child:secret",
      "clé ü 😀",
      "k".repeat(64),
      "k".repeat(200),
      "s\ud800",
      "k".repeat(65),
    ]
  ) {
    const key = await crypto.subtle.importKey(
      "raw",
      enc.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    for (const t of TEXTS) {
      const mac = await crypto.subtle.sign("HMAC", key, enc.encode(t));
      assert.equal(hmacBase64url(hmacKey(secret), t), b64url(mac), `${secret} ${t}`);
      assert.equal(hmacHex(hmacKey(secret), t), hex(mac), `${secret} ${t}`);
      assert.equal(hmacBase64url(hmacKey(enc.encode(secret)), t), b64url(mac), "key as bytes");
    }
  }
});
