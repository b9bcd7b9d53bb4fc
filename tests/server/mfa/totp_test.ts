import assert from "node:assert/strict";
import {
  base32Decode,
  base32Encode,
  hotp,
  newTotpSecret,
  otpauthUri,
  totpCode,
  totpMatch,
} from "../../../server/auth/totp.ts";
import { qrDataUri, qrSvg } from "../../../server/auth/qr.ts";
import { jsQR } from "../../helpers/deps.ts";
import { totpAt } from "./_helpers.ts";

const enc = new TextEncoder();
const b32 = (ascii: string) => base32Encode(enc.encode(ascii));

// RFC 6238 Appendix B: the seeds are the ASCII strings below; codes have 8 digits.
const SHA1_SEED = "12345678901234567890";
const SHA256_SEED = "12345678901234567890123456789012";
const SHA512_SEED = "1234567890123456789012345678901234567890123456789012345678901234";
const VECTORS: [number, string, string, string][] = [
  [59, "94287082", "46119246", "90693936"],
  [1111111109, "07081804", "68084774", "25091201"],
  [1111111111, "14050471", "67062674", "99943326"],
  [1234567890, "89005924", "91819424", "93441116"],
  [2000000000, "69279037", "90698825", "38618901"],
  [20000000000, "65353130", "77737706", "47863826"],
];

Deno.test("TOTP matches every RFC 6238 test vector (SHA-1, SHA-256, SHA-512, 8 digits)", async () => {
  for (const [t, sha1, sha256, sha512] of VECTORS) {
    assert.equal(await totpCode(b32(SHA1_SEED), t, { digits: 8 }), sha1, `SHA-1 T=${t}`);
    assert.equal(
      await totpCode(b32(SHA256_SEED), t, { digits: 8, hash: "SHA-256" }),
      sha256,
      `SHA-256 T=${t}`,
    );
    assert.equal(
      await totpCode(b32(SHA512_SEED), t, { digits: 8, hash: "SHA-512" }),
      sha512,
      `SHA-512 T=${t}`,
    );
  }
  // The server's profile: the last 6 digits of the SHA-1 vector.
  assert.equal(await totpCode(b32(SHA1_SEED), 59), "287082");
});

Deno.test("HOTP matches the RFC 4226 Appendix D values", async () => {
  const expected = [
    "755224",
    "287082",
    "359152",
    "969429",
    "338314",
    "254676",
    "287922",
    "162583",
    "399871",
    "520489",
  ];
  for (let i = 0; i < expected.length; i++) {
    assert.equal(await hotp(enc.encode(SHA1_SEED), i), expected[i], `counter ${i}`);
  }
});

Deno.test("base32 follows RFC 4648 and round-trips random secrets", () => {
  const cases: [string, string][] = [
    ["", ""],
    ["f", "MY"],
    ["fo", "MZXQ"],
    ["foo", "MZXW6"],
    ["foob", "MZXW6YQ"],
    ["fooba", "MZXW6YTB"],
    ["foobar", "MZXW6YTBOI"],
  ];
  for (const [plain, coded] of cases) {
    assert.equal(b32(plain), coded);
    assert.equal(new TextDecoder().decode(base32Decode(coded)), plain);
  }
  // What people type: lower case, spaces, padding.
  assert.equal(new TextDecoder().decode(base32Decode("mzxw 6ytb oi======")), "foobar");
  assert.throws(() => base32Decode("MZ1W"), /Invalid base32 character "1"/);
  const secret = newTotpSecret();
  assert.match(secret, /^[A-Z2-7]{32}$/);
  assert.equal(base32Decode(secret).length, 20);
  assert.notEqual(newTotpSecret(), secret);
});

Deno.test("a code is accepted one step early or late, not two, and reports its step", async () => {
  const secret = newTotpSecret();
  const t = 1_700_000_015; // the middle of step 56666667
  const step = Math.floor(t / 30);
  for (const delta of [-1, 0, 1]) {
    const code = totpAt(secret, (t + delta * 30) * 1000);
    assert.equal(await totpMatch(secret, code, t), step + delta, `drift ${delta}`);
  }
  for (const delta of [-2, 2]) {
    const code = totpAt(secret, (t + delta * 30) * 1000);
    assert.equal(await totpMatch(secret, code, t), null, `drift ${delta}`);
  }
  assert.equal(await totpMatch(secret, "12345", t), null);
  assert.equal(await totpMatch(secret, "abcdef", t), null);
  assert.equal(await totpCode(secret, t), totpAt(secret, t * 1000));
});

Deno.test("the otpauth URI carries issuer, account and secret as authenticator apps read them", () => {
  const uri = otpauthUri({ secret: "JBSWY3DPEHPK3PXP", issuer: "Acme Co", account: "a@b.example" });
  const u = new URL(uri);
  assert.equal(u.protocol, "otpauth:");
  assert.equal(u.host, "totp");
  assert.equal(decodeURIComponent(u.pathname.slice(1)), "Acme Co:a@b.example");
  assert.equal(u.searchParams.get("secret"), "JBSWY3DPEHPK3PXP");
  assert.equal(u.searchParams.get("issuer"), "Acme Co");
  assert.equal(u.searchParams.get("algorithm"), "SHA1");
  assert.equal(u.searchParams.get("digits"), "6");
  assert.equal(u.searchParams.get("period"), "30");
  assert.ok(!uri.includes("+"), "spaces are %20, never +");
});

Deno.test("the QR code is a square SVG of dark modules with finder patterns and no '#'", () => {
  const uri = otpauthUri({
    secret: newTotpSecret(),
    issuer: "localhost:3000",
    account: "x@y.example",
  });
  const svg = qrSvg(uri);
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^>]*>.*<\/svg>$/);
  const box = /viewBox="0 0 (\d+) (\d+)"/.exec(svg)!;
  assert.equal(box[1], box[2]);
  const modules = Number(box[1]) - 8;
  assert.equal((modules - 17) % 4, 0, "a QR code is 17 + 4*version modules wide");
  assert.ok(modules >= 33, "an otpauth URI needs version 4 or more");
  // The top-left finder pattern: a 7-module dark run on the first row, at the quiet zone.
  assert.match(svg, /M4 4h7v1h-7z/);
  assert.ok(!svg.includes("#"));
  assert.equal(qrDataUri(uri), `data:image/svg+xml;utf-8,${svg}`);
  assert.notEqual(qrSvg(uri + "x"), svg);
});

/** Draws the SVG's squares into an RGBA image, `scale` pixels per module, as a screen would. */
function rasterize(svg: string, scale = 4): { data: Uint8ClampedArray; size: number } {
  const n = Number(/viewBox="0 0 (\d+) \d+"/.exec(svg)![1]);
  const size = n * scale;
  const data = new Uint8ClampedArray(size * size * 4).fill(255);
  for (const m of svg.matchAll(/M(\d+) (\d+)h(\d+)v1h-\d+z/g)) {
    const [x, y, w] = [Number(m[1]), Number(m[2]), Number(m[3])];
    for (let py = y * scale; py < (y + 1) * scale; py++) {
      for (let px = x * scale; px < (x + w) * scale; px++) {
        const i = (py * size + px) * 4;
        data[i] = data[i + 1] = data[i + 2] = 0;
      }
    }
  }
  return { data, size };
}

Deno.test("the QR code decodes (with jsQR, as a camera app would) to exactly the otpauth URI", () => {
  for (const account of ["someone@example.com", "15551234567", "a+b@sub.example.org"]) {
    const uri = otpauthUri({ secret: newTotpSecret(), issuer: "Acme Co", account });
    const { data, size } = rasterize(qrSvg(uri));
    const read = jsQR(data, size, size);
    assert.ok(read, `no QR code found for ${account}`);
    assert.equal(read.data, uri);
  }
});
