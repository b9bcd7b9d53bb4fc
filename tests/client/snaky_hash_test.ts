/** SnakyHash, its Serializer, and response parsing (docs/client.md). */
import assert from "node:assert/strict";
import { OAuthResponse, Serializer, snakeCase, SnakyHash } from "../../mod.ts";

Deno.test("snakeCase converts provider spellings", () => {
  assert.equal(snakeCase("expiresIn"), "expires_in");
  assert.equal(snakeCase("IDToken"), "id_token");
  assert.equal(snakeCase("token-type"), "token_type");
  assert.equal(snakeCase("already_snake"), "already_snake");
  assert.equal(snakeCase("userID2Value"), "user_id2_value");
});

Deno.test("SnakyHash: snake_case keys, property and get() access in either spelling, nesting", () => {
  const h = new SnakyHash({
    accessToken: "abc",
    expiresIn: 3600,
    user: { firstName: "Ann" },
    list: [{ aB: 1 }],
  });
  assert.deepEqual(h.keys(), ["access_token", "expires_in", "user", "list"]);
  assert.equal(h.access_token, "abc");
  assert.equal(h["expires_in"], 3600);
  assert.equal(h.get("expiresIn"), 3600);
  assert.equal(h.get("expires_in"), 3600);
  assert.ok(h.has("accessToken"));
  assert.ok(h.user instanceof SnakyHash);
  assert.equal((h.user as SnakyHash).first_name, "Ann");
  assert.equal((h.list as SnakyHash[])[0].a_b, 1);
  assert.deepEqual(h.toObject(), {
    access_token: "abc",
    expires_in: 3600,
    user: { first_name: "Ann" },
    list: [{ a_b: 1 }],
  });
  assert.equal(JSON.stringify(h), JSON.stringify(h.toObject()));
  assert.ok(h.delete("accessToken"));
  assert.equal(h.access_token, undefined);
  assert.equal(h.has("access_token"), false);
});

Deno.test("SnakyHash: keys named like members (get, method, keys, size) never shadow them", () => {
  class WithMethod extends SnakyHash {
    method(): string {
      return "the method";
    }
  }
  const h = new WithMethod({
    get: "g",
    method: "POST",
    keys: "k",
    size: 99,
    toObject: 1,
    __proto__: 5,
  });
  assert.equal(typeof h.get, "function");
  assert.equal(h.get("get"), "g");
  assert.equal(h.method(), "the method");
  assert.equal(h.get("method"), "POST");
  assert.deepEqual(h.keys(), ["get", "method", "keys", "size", "to_object"]);
  assert.equal(h.size, 5);
  assert.equal(h.get("keys"), "k");
  assert.equal(h.get("size"), 99);
  assert.equal(Object.getPrototypeOf(h), WithMethod.prototype);
  assert.equal(h.toObject().method, "POST");
  assert.ok(h.user === undefined);
});

Deno.test("Serializer: dump and load with value and hash hooks, per class", () => {
  class Stored extends SnakyHash {}
  Serializer.extend(Stored);
  Stored.dumpValueHooks.push((v) => (typeof v === "string" ? `enc:${v}` : v));
  Stored.loadValueHooks.push((v) => (typeof v === "string" ? v.replace(/^enc:/, "") : v));
  Stored.dumpHashHooks.push((h) => ({ ...h, v: 1 }));
  Stored.loadHashHooks.push((h) => {
    const { v: _v, ...rest } = h;
    return rest;
  });
  const original = new Stored({ accessToken: "abc", nested: { tokenType: "bearer" }, n: 5 });
  const text = Stored.dump(original);
  assert.deepEqual(JSON.parse(text), {
    access_token: "enc:abc",
    nested: { token_type: "enc:bearer", v: 1 },
    n: 5,
    v: 1,
  });
  const back = Stored.load(text);
  assert.ok(back instanceof Stored);
  assert.deepEqual(back.toObject(), original.toObject());
  assert.ok(back.nested instanceof Stored);

  class Other extends SnakyHash {}
  Serializer.extend(Other);
  assert.equal(Other.dump(new Other({ a: "x" })), '{"a":"x"}', "hooks of Stored do not apply");
  assert.throws(() => Serializer.extend(Object as never), /"klass"/);
  assert.throws(() => Other.load("[1]"), /JSON object/);
});

function response(body: string, type: string | null, status = 200): globalThis.Response {
  return new Response(body, { status, headers: type ? { "content-type": type } : {} });
}

Deno.test("parsed: JSON object → SnakyHash, array → array, form → SnakyHash, text → string", async () => {
  const obj = await OAuthResponse.from(
    response('{"accessToken":"a","n":1}', "application/json; charset=utf-8"),
  );
  assert.ok(obj.parsed instanceof SnakyHash);
  assert.equal((obj.parsed as SnakyHash).access_token, "a");
  assert.equal(obj.contentType, "application/json");
  const arr = await OAuthResponse.from(response('[{"aB":1},2]', "application/json"));
  assert.deepEqual(arr.parsed, [{ aB: 1 }, 2]);
  const form = await OAuthResponse.from(
    response("a=1&fooBar=x+y", "application/x-www-form-urlencoded"),
  );
  assert.deepEqual((form.parsed as SnakyHash).toObject(), { a: "1", foo_bar: "x y" });
  const text = await OAuthResponse.from(response("hello", "text/plain"));
  assert.equal(text.parsed, "hello");
  const vendor = await OAuthResponse.from(response('{"x":1}', "application/vnd.api+json"));
  assert.ok(vendor.parsed instanceof SnakyHash);
  const broken = await OAuthResponse.from(response("{not json", "application/json"));
  assert.equal(broken.parsed, "{not json");
  const scalar = await OAuthResponse.from(response("42", "application/json"));
  assert.equal(scalar.parsed, "42");
  const empty = await OAuthResponse.from(response("", "application/json"));
  assert.equal(empty.parsed, null);
  const untyped = await OAuthResponse.from(new Response(new TextEncoder().encode("x")));
  assert.equal(untyped.contentType, null);
  assert.equal(untyped.parsed, "x");
});

Deno.test("parsed: snaky false keeps keys; parse forces a parser; custom class", async () => {
  const plain = await OAuthResponse.from(response('{"accessToken":"a"}', "application/json"), {
    snaky: false,
  });
  assert.deepEqual(plain.parsed, { accessToken: "a" });
  assert.ok(!(plain.parsed instanceof SnakyHash));
  const forcedJson = await OAuthResponse.from(response('{"a":1}', "text/html"), { parse: "json" });
  assert.ok(forcedJson.parsed instanceof SnakyHash);
  const forcedText = await OAuthResponse.from(response('{"a":1}', "application/json"), {
    parse: "text",
  });
  assert.equal(forcedText.parsed, '{"a":1}');
  const forcedQuery = await OAuthResponse.from(response("a=1", "text/plain"), { parse: "query" });
  assert.equal((forcedQuery.parsed as SnakyHash).a, "1");
  class Mine extends SnakyHash {}
  const mine = await OAuthResponse.from(response('{"a":{"b":1}}', "application/json"), {
    snakyHashClass: Mine,
  });
  assert.ok(mine.parsed instanceof Mine);
  assert.ok((mine.parsed as Mine).a instanceof Mine);
});

Deno.test("Serializer applied globally: SnakyHash and subclasses without their own hooks share it", () => {
  Serializer.extend(SnakyHash);
  class Child extends SnakyHash {}
  const text = Child.dump(new Child({ tokenType: "bearer" }));
  assert.equal(text, '{"token_type":"bearer"}');
  const back = Child.load(text);
  assert.ok(back instanceof Child, "load builds the class it is called on");
  assert.ok(SnakyHash.load(text) instanceof SnakyHash);
  assert.equal(Child.dumpValueHooks, SnakyHash.dumpValueHooks, "inherited until extended");
  Serializer.extend(Child);
  assert.notEqual(Child.dumpValueHooks, SnakyHash.dumpValueHooks, "own hooks once extended");
});
