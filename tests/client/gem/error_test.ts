/**
 * Port of ruby-oauth/oauth2 spec/oauth2/error_spec.rb: one Deno test per
 * example, named "error_spec.rb: <context> <example>".
 *
 * Documented differences: an error built from a bare record or array (the
 * gem's `OAuth2::Error.new(hash)`) gets a response whose JSON body is that
 * value, and its message shows the JSON where Ruby shows `Hash#to_s`; a
 * fetched body is always text (no Ruby Hash body, StirredHash or
 * XmledString: those examples are listed in docs/client.md). Bodies are decoded as UTF-8, so an
 * emoji stays an emoji where Ruby's ASCII-8BIT re-encoding replaced it with
 * "�"; invalid bytes become "�" in both.
 */
import assert from "node:assert/strict";
import { OAuthError, OAuthResponse } from "../../../mod.ts";

const S = "error_spec.rb";

async function errorFor(
  body: string | Uint8Array,
  headers: Record<string, string> = { "Content-Type": "application/json" },
): Promise<OAuthError> {
  const raw = new Response(body as BodyInit, { status: 418, headers });
  return new OAuthError(await OAuthResponse.from(raw));
}

/** The gem's `response_hash.to_json` with keys in insertion order. */
function body(extra: Record<string, string> = {}, remove: string[] = []): string {
  const h: Record<string, string> = { text: "Coffee brewing failed", ...extra };
  for (const k of remove) delete h[k];
  return JSON.stringify(h);
}
const lines = (m: string) => m.split(/(?<=\n)/);
const bytesWithInvalid = (text: string, word: string) => {
  const [a, b] = text.split(word);
  const enc = new TextEncoder();
  return new Uint8Array([
    ...enc.encode(a),
    0xad,
    ...enc.encode(" invalid "),
    0xad,
    ...enc.encode(b),
  ]);
};

Deno.test(`${S}: sets the response object to #response on self`, async () => {
  const response = await OAuthResponse.from(new Response("{}", { status: 418 }));
  assert.equal(new OAuthError(response).response, response);
});
Deno.test(`${S}: attr_readers has code`, async () => {
  assert.ok("code" in await errorFor(body()));
});
Deno.test(`${S}: attr_readers has description`, async () => {
  assert.ok("description" in await errorFor(body()));
});
Deno.test(`${S}: attr_readers has response`, async () => {
  assert.ok((await errorFor(body())).response instanceof OAuthResponse);
});

// when the response is parsed
const P = `${S}: when the response is parsed`;
const both = { error_description: "Short and stout", error: "i_am_a_teapot" };
Deno.test(`${P} when the response has an error and error_description sets the code attribute`, async () => {
  assert.equal((await errorFor(body(both))).code, "i_am_a_teapot");
});
Deno.test(`${P} when the response has an error and error_description sets the description attribute`, async () => {
  assert.equal((await errorFor(body(both))).description, "Short and stout");
});
Deno.test(`${P} when the response has an error and error_description prepends to the error message with a return character`, async () => {
  assert.deepEqual(lines((await errorFor(body(both))).message), [
    "i_am_a_teapot: Short and stout\n",
    '{"text":"Coffee brewing failed","error_description":"Short and stout","error":"i_am_a_teapot"}',
  ]);
});
for (
  const [ctx, extra] of [
    ["when the response has an error and error_description", both],
    ["when there is code (error)", { ...both, status: "418" }],
    ["when there is error_description but no code (error)", {
      error_description: "Short and stout",
    }],
  ] as const
) {
  Deno.test(`${P} ${ctx} when the response needs to be encoded with invalid characters present replaces them`, async () => {
    const e = await errorFor(bytesWithInvalid(body(extra), "stout"));
    assert.ok(e.message.includes("� invalid �"), e.message);
  });
  Deno.test(`${P} ${ctx} when the response needs to be encoded with undefined characters present replaces them (UTF-8 decoded: the emoji is kept)`, async () => {
    const desc = {
      ...extra,
      error_description: `${extra.error_description}: 'A magical voyage of tea 🍵'`,
    };
    const e = await errorFor(new TextEncoder().encode(body(desc)));
    assert.ok(e.message.includes("tea 🍵"), e.message);
  });
}
Deno.test(`${P} when there is code (error) but no error_description when the response needs to be encoded with invalid characters present replaces them`, async () => {
  const e = await errorFor(
    bytesWithInvalid(body({ error: "i_am_a_teapot", status: "418" }), "brewing"),
  );
  assert.ok(e.message.includes("� invalid �"), e.message);
});
Deno.test(`${P} when the response has an error and error_description when using :xml parser parses the XML (the body is the message: XML is not parsed)`, async () => {
  const xml =
    '\n<things>\n<thing id="101">\n<name>� Cool � XmledString</name>\n</thing>\n</things>\n';
  assert.equal((await errorFor(xml, { "Content-Type": "text/xml" })).message, xml);
});
Deno.test(`${P} sets the code attribute to nil`, async () => {
  assert.equal((await errorFor(body())).code, undefined);
});
Deno.test(`${P} sets the description attribute`, async () => {
  assert.equal((await errorFor(body())).description, undefined);
});
Deno.test(`${P} when there is no error description does not prepend anything to the message`, async () => {
  const m = (await errorFor(body())).message;
  assert.equal(m.split("\n").length, 1);
  assert.equal(m, '{"text":"Coffee brewing failed"}');
});
Deno.test(`${P} when there is no error description does not set code`, async () => {
  assert.equal((await errorFor(body())).code, undefined);
});
Deno.test(`${P} when there is no error description does not set description`, async () => {
  assert.equal((await errorFor(body())).description, undefined);
});
const withCode = { ...both, status: "418" };
Deno.test(`${P} when there is code (error) prepends to the error message with a return character`, async () => {
  assert.deepEqual(lines((await errorFor(body(withCode))).message), [
    "i_am_a_teapot: Short and stout\n",
    JSON.stringify({
      text: "Coffee brewing failed",
      error_description: "Short and stout",
      error: "i_am_a_teapot",
      status: "418",
    }),
  ]);
});
Deno.test(`${P} when there is code (error) sets the code attribute`, async () => {
  assert.equal((await errorFor(body(withCode))).code, "i_am_a_teapot");
});
Deno.test(`${P} when there is code (error) sets the description attribute`, async () => {
  assert.equal((await errorFor(body(withCode))).description, "Short and stout");
});
const codeOnly = { error: "i_am_a_teapot", status: "418" };
Deno.test(`${P} when there is code (error) but no error_description prepends to the error message with a return character`, async () => {
  assert.deepEqual(lines((await errorFor(body(codeOnly))).message), [
    "i_am_a_teapot: \n",
    JSON.stringify({ text: "Coffee brewing failed", error: "i_am_a_teapot", status: "418" }),
  ]);
});
Deno.test(`${P} when there is code (error) but no error_description sets the code attribute from error`, async () => {
  assert.equal((await errorFor(body(codeOnly))).code, "i_am_a_teapot");
});
Deno.test(`${P} when there is code (error) but no error_description does not set the description attribute`, async () => {
  assert.equal((await errorFor(body(codeOnly))).description, undefined);
});
const descOnly = { error_description: "Short and stout" };
Deno.test(`${P} when there is error_description but no code (error) prepends to the error message with a return character`, async () => {
  assert.deepEqual(lines((await errorFor(body(descOnly))).message), [
    "Short and stout\n",
    JSON.stringify({ text: "Coffee brewing failed", error_description: "Short and stout" }),
  ]);
});
Deno.test(`${P} when there is error_description but no code (error) sets the code attribute`, async () => {
  assert.equal((await errorFor(body(descOnly))).code, undefined);
});
Deno.test(`${P} when there is error_description but no code (error) sets the description attribute`, async () => {
  assert.equal((await errorFor(body(descOnly))).description, "Short and stout");
});

const html = "<!DOCTYPE html><html><head>Hello, I am a teapot</head><body></body></html>";
const D = `${S}: when the response does not parse to a hash`;
Deno.test(`${D} does not do anything to the message`, async () => {
  const e = await errorFor(html, { "Content-Type": "text/html" });
  assert.ok(!(e.response.parsed instanceof Object && !Array.isArray(e.response.parsed)));
  assert.equal(e.message.split("\n").length, 1);
  assert.equal(e.message, html);
});
Deno.test(`${D} does not set code`, async () => {
  assert.equal((await errorFor(html, { "Content-Type": "text/html" })).code, undefined);
});
Deno.test(`${D} does not set description`, async () => {
  assert.equal((await errorFor(html, { "Content-Type": "text/html" })).description, undefined);
});
Deno.test(`${S}: parsing json does not blow up`, async () => {
  const e = await errorFor(body());
  JSON.stringify(e);
  JSON.stringify(e.response);
});

// "when the response is simple hash, not parsed": `new OAuthError(record)`
// takes an error body the caller already has, as `OAuth2::Error.new(hash)`;
// the message shows it as JSON where Ruby shows `Hash#to_s`.
const H = `${S}: when the response is simple hash, not parsed`;
const teapot = { error_description: "Short and stout", error: "i_am_a_teapot" };
const hashError = (extra: Record<string, string> = {}, base: Record<string, unknown> = {
  text: "Coffee brewing failed",
}) => new OAuthError({ ...base, ...extra });
Deno.test(`${H} sets the code attribute to nil`, () => {
  assert.equal(hashError().code, undefined);
});
Deno.test(`${H} sets the description attribute`, () => {
  assert.equal(hashError().description, undefined);
});
Deno.test(`${H} when the response has an error and error_description sets the code attribute`, () => {
  assert.equal(hashError(teapot).code, "i_am_a_teapot");
});
Deno.test(`${H} when the response has an error and error_description sets the description attribute`, () => {
  assert.equal(hashError(teapot).description, "Short and stout");
});
Deno.test(`${H} when the response has an error and error_description prepends to the error message with a return character`, () => {
  assert.deepEqual(lines(hashError(teapot).message), [
    "i_am_a_teapot: Short and stout\n",
    JSON.stringify({ text: "Coffee brewing failed", ...teapot }),
  ]);
});
Deno.test(`${H} when the response has an error and error_description when using :xml parser with non-String-like thing just returns whatever it can`, () => {
  // the content type plays no part for an error built from a record
  assert.deepEqual(lines(hashError(teapot, { hello: "world" }).message), [
    "i_am_a_teapot: Short and stout\n",
    JSON.stringify({ hello: "world", ...teapot }),
  ]);
});
Deno.test(`${H} when using :xml parser with non-String-like thing just returns the thing if it can`, () => {
  assert.equal(hashError({}, { hello: "world" }).message, JSON.stringify({ hello: "world" }));
});
Deno.test(`${H} when there is no error description does not prepend anything to the message`, () => {
  const m = hashError().message;
  assert.equal(lines(m).length, 1);
  assert.equal(m, JSON.stringify({ text: "Coffee brewing failed" }));
});
Deno.test(`${H} when there is no error description does not set code`, () => {
  assert.equal(hashError().code, undefined);
});
Deno.test(`${H} when there is no error description does not set description`, () => {
  assert.equal(hashError().description, undefined);
});
const withStatus = { ...teapot, status: "418" };
Deno.test(`${H} when there is code (error) prepends to the error message with a return character`, () => {
  assert.deepEqual(lines(hashError(withStatus).message), [
    "i_am_a_teapot: Short and stout\n",
    JSON.stringify({ text: "Coffee brewing failed", ...withStatus }),
  ]);
});
Deno.test(`${H} when there is code (error) sets the code attribute`, () => {
  assert.equal(hashError(withStatus).code, "i_am_a_teapot");
});
Deno.test(`${H} when there is code (error) sets the description attribute`, () => {
  assert.equal(hashError(withStatus).description, "Short and stout");
});
const hashCodeOnly = { error: "i_am_a_teapot", status: "418" };
Deno.test(`${H} when there is code (error) but no error_description sets the code attribute from error`, () => {
  assert.equal(hashError(hashCodeOnly).code, "i_am_a_teapot");
});
Deno.test(`${H} when there is code (error) but no error_description does not set the description attribute`, () => {
  assert.equal(hashError(hashCodeOnly).description, undefined);
});
Deno.test(`${H} when there is code (error) but no error_description prepends to the error message with a return character`, () => {
  assert.deepEqual(lines(hashError(hashCodeOnly).message), [
    "i_am_a_teapot: \n",
    JSON.stringify({ text: "Coffee brewing failed", ...hashCodeOnly }),
  ]);
});
const description = { error_description: "Short and stout" };
Deno.test(`${H} when there is error_description but no code (error) prepends to the error message with a return character`, () => {
  assert.deepEqual(lines(hashError(description).message), [
    "Short and stout\n",
    JSON.stringify({ text: "Coffee brewing failed", ...description }),
  ]);
});
Deno.test(`${H} when there is error_description but no code (error) when the response is not an encodable thing does not try to encode the message string`, () => {
  // a record is never re-encoded: the message holds its JSON as it is
  const e = hashError({ ...description, note: "caf\u00e9 \u2615" });
  assert.deepEqual(lines(e.message), [
    "Short and stout\n",
    JSON.stringify({ text: "Coffee brewing failed", ...description, note: "caf\u00e9 \u2615" }),
  ]);
});
Deno.test(`${H} when there is error_description but no code (error) sets the code attribute`, () => {
  assert.equal(hashError(description).code, undefined);
});
Deno.test(`${H} when there is error_description but no code (error) sets the description attribute`, () => {
  assert.equal(hashError(description).description, "Short and stout");
});

// "when the response is not a hash, not parsed": an array, as `OAuth2::Error.new([200, "Success"])`.
const N = `${S}: when the response is not a hash, not parsed`;
const thing = [200, "Success"];
Deno.test(`${N} sets the code attribute to nil`, () => {
  assert.equal(new OAuthError(thing).code, undefined);
});
Deno.test(`${N} sets the description attribute`, () => {
  assert.equal(new OAuthError(thing).description, undefined);
});
Deno.test(`${N} sets the body attribute`, () => {
  assert.equal(new OAuthError(thing).response.body, JSON.stringify(thing));
});
Deno.test(`${N} sets the response attribute`, () => {
  assert.deepEqual(new OAuthError(thing).response.parsed, thing);
});
