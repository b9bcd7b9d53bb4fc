/**
 * Port of ruby-oauth/oauth2 spec/oauth2/response_spec.rb: one Deno test per
 * example, named "response_spec.rb: <context> <example>".
 *
 * Documented differences: a response is built from a fetch `Response`
 * (`OAuthResponse.from`), not a Faraday double; `contentType` is null when
 * the header is missing (the gem: "" with headers, nil without); a body of
 * another content type parses to the body string (docs/client.md,
 * "Requests, responses and errors"; the gem: nil); `parsed.key(v)` (Ruby's reverse lookup) is read from
 * the entries; `snakyHashClass` must be SnakyHash or a subclass (the gem
 * takes any Hash class); Ruby symbol access (`h[:k]`) is the same string key;
 * the serializer's extension registries (`dump_value_extensions.add(:name)`)
 * are the hook arrays of our Serializer (`dumpValueHooks.push`).
 * Not ported: XML parsing (multi_xml; the library has no XML dependency:
 * register a parser for it), a body that is already a Ruby Hash, and
 * parser blocks of arity 0/3 (a JS function ignores extra or missing
 * arguments, so one test covers them).
 */
import assert from "node:assert/strict";
import { OAuthResponse, type Parser, Serializer, SnakyHash } from "../../../mod.ts";

const S = "response_spec.rb";
const from = (body: string | null, headers: Record<string, string> | undefined, opts = {}) =>
  OAuthResponse.from(new Response(body, { status: 200, headers }), opts);

Deno.test(`${S}: #initialize returns the status, headers and body`, async () => {
  const r = await from("foo", { foo: "bar" });
  assert.equal(r.headers.get("foo"), "bar");
  assert.equal(r.status, 200);
  assert.equal(r.body, "foo");
});

Deno.test(`${S}: .register_parser adds to the content types and parsers`, async () => {
  OAuthResponse.registerParser("foobar", ["application/foo-bar"], (body) => `foobar ${body}`);
  assert.equal(
    (await from("baz", { "Content-Type": "text/plain" }, { parse: "foobar" })).parsed,
    "foobar baz",
  );
});
Deno.test(`${S}: .register_parser is able to parse that content type automatically`, async () => {
  OAuthResponse.registerParser("foobar", ["application/foo-bar"], (body) => `foobar ${body}`);
  assert.equal((await from("baz", { "Content-Type": "application/foo-bar" })).parsed, "foobar baz");
});

Deno.test(`${S}: #content_type when headers are blank returns nil (null)`, () => {
  assert.equal(new OAuthResponse(new Response(null), "foo").contentType, null);
});
Deno.test(`${S}: #content_type when content-type is not present returns empty string (null: documented)`, () => {
  // "a fuzzy" is no valid header name in fetch: "a-fuzzy"
  const r = new OAuthResponse(new Response(null, { headers: { "a-fuzzy": "fuzzer" } }), "foo");
  assert.equal(r.contentType, null);
});
Deno.test(`${S}: #content_type when content-type is present returns the content type header contents`, async () => {
  const r = await from("a=b", { "Content-Type": "application/x-www-form-urlencoded" });
  assert.equal(r.contentType, "application/x-www-form-urlencoded");
});

const JSON_BODY = JSON.stringify({
  foo: "bar",
  answer: 42,
  krill: null,
  zero: 0,
  malign: false,
  shine: true,
});
const keyOf = (h: SnakyHash, v: unknown) => h.entries().find(([, x]) => x === v)?.[0];
for (const type of ["application/json", "application/Json", "application/hal+json"]) {
  const d = `${S}: #parsed when ${type} parsing JSON-like`;
  const parsed = async () => (await from(JSON_BODY, { "Content-Type": type })).parsed as SnakyHash;
  Deno.test(`${d} has num keys`, async () => assert.equal((await parsed()).keys().length, 6));
  Deno.test(`${d} parses string`, async () => {
    const p = await parsed();
    assert.equal(p.foo, "bar");
    assert.equal(keyOf(p, "bar"), "foo");
  });
  Deno.test(`${d} parses non-zero number`, async () => {
    const p = await parsed();
    assert.equal(p.answer, 42);
    assert.equal(keyOf(p, 42), "answer");
  });
  Deno.test(`${d} parses nil as NilClass`, async () => {
    const p = await parsed();
    assert.equal(p.krill, null);
    assert.equal(keyOf(p, null), "krill");
  });
  Deno.test(`${d} parses zero as number`, async () => {
    const p = await parsed();
    assert.equal(p.zero, 0);
    assert.equal(keyOf(p, 0), "zero");
  });
  Deno.test(`${d} parses false as FalseClass`, async () => {
    const p = await parsed();
    assert.equal(p.malign, false);
    assert.equal(keyOf(p, false), "malign");
  });
  Deno.test(`${d} parses false as TrueClass`, async () => {
    const p = await parsed();
    assert.equal(p.shine, true);
    assert.equal(keyOf(p, true), "shine");
  });
}
{
  const d = `${S}: #parsed when application/x-www-form-urlencoded`;
  const parsed = async () =>
    (await from("foo=bar&answer=42&krill=&zero=0&malign=false&shine=true", {
      "Content-Type": "application/x-www-form-urlencoded",
    })).parsed as SnakyHash;
  Deno.test(`${d} has num keys`, async () => assert.equal((await parsed()).keys().length, 6));
  for (
    const [ex, key, value] of [
      ["parses string", "foo", "bar"],
      ["parses non-zero number as string", "answer", "42"],
      ["parses nil as empty string", "krill", ""],
      ["parses zero as string", "zero", "0"],
      ["parses false as string", "malign", "false"],
      ["parses true as string", "shine", "true"],
    ]
  ) {
    Deno.test(`${d} ${ex}`, async () => {
      const p = await parsed();
      assert.equal(p.get(key), value);
      assert.equal(keyOf(p, value), key);
    });
  }
}
for (const type of ["application/vnd.collection+json", "application/vnd.api+json"]) {
  Deno.test(`${S}: #parsed parses ${type} body`, async () => {
    const p = (await from(JSON.stringify({ collection: {} }), { "Content-Type": type })).parsed;
    assert.equal((p as SnakyHash).keys().length, 1);
  });
}
Deno.test(`${S}: #parsed parses application/problem+json body`, async () => {
  const body = JSON.stringify({
    type: "https://tools.ietf.org/html/rfc7231#section-6.5.4",
    title: "Not Found",
  });
  const p = (await from(body, { "Content-Type": "application/problem+json" })).parsed as SnakyHash;
  assert.equal(p.keys().length, 2);
  assert.equal(p.type, "https://tools.ietf.org/html/rfc7231#section-6.5.4");
  assert.equal(p.title, "Not Found");
});
const HTML = "<!DOCTYPE html><html><head></head><body></body></html>";
Deno.test(`${S}: #parsed doesn't try to parse other content-types (the body string: docs/client.md)`, async () => {
  assert.equal((await from(HTML, { "Content-Type": "text/html" })).parsed, HTML);
});
Deno.test(`${S}: #parsed snakecases json keys when parsing`, async () => {
  const body = JSON.stringify({ accessToken: "bar", MiGever: "Ani" });
  const p = (await from(body, { "Content-Type": "application/json" })).parsed as SnakyHash;
  assert.equal(p.keys().length, 2);
  assert.equal(p.access_token, "bar");
  assert.equal(p.mi_gever, "Ani");
});
Deno.test(`${S}: #parsed when not snaky does not snakecase json keys when parsing`, async () => {
  const body = JSON.stringify({ accessToken: "bar", MiGever: "Ani" });
  const p = (await from(body, { "Content-Type": "application/json" }, { snaky: false }))
    .parsed as Record<string, unknown>;
  assert.equal(Object.keys(p).length, 2);
  assert.equal(p.accessToken, "bar");
  assert.equal(p.MiGever, "Ani");
  assert.equal(p.access_token, undefined);
  assert.equal(p.mi_gever, undefined);
});
Deno.test(`${S}: #parsed supports registered parsers with arity == 2; passing body and response`, async () => {
  let seen: [string, Response] | undefined;
  OAuthResponse.registerParser("arity_2", [], (body, response) => {
    seen = [body, response];
    return "a-ok";
  });
  const r = await from(HTML, { "Content-Type": "text/html" }, { parse: "arity_2" });
  assert.equal(r.parsed, "a-ok");
  assert.equal(seen![0], HTML);
  assert.equal(seen![1], r.response);
});
Deno.test(`${S}: #parsed supports registered parsers with arity == 0; passing nothing`, async () => {
  OAuthResponse.registerParser("arity_0", [], () => "a-ok");
  const r = await from(HTML, { "Content-Type": "text/html" }, { parse: "arity_0" });
  assert.equal(r.parsed, "a-ok");
});
Deno.test(`${S}: #parsed supports registered parsers with arity > 2; passing body and response`, async () => {
  let seen: unknown[] | undefined;
  const parser = (body: string, response: Response, ...rest: unknown[]) => {
    seen = [body, response, rest];
    return "a-ok";
  };
  OAuthResponse.registerParser("arity_3", [], parser as Parser);
  const r = await from(HTML, { "Content-Type": "text/html" }, { parse: "arity_3" });
  assert.equal(r.parsed, "a-ok");
  assert.equal(seen![0], HTML);
  assert.equal(seen![1], r.response);
  assert.deepEqual(seen![2], [], "nothing beyond the body and the response");
});
Deno.test(`${S}: #parsed supports directly passed parsers`, async () => {
  const parse: Parser = () => "a-ok";
  assert.equal((await from(HTML, { "Content-Type": "text/html" }, { parse })).parsed, "a-ok");
});
Deno.test(`${S}: #parsed supports no parsing`, async () => {
  assert.equal((await from(HTML, { "Content-Type": "text/html" }, { parse: false })).parsed, null);
});
Deno.test(`${S}: converting to json does not blow up`, async () => {
  JSON.stringify(await from("foo", { foo: "bar" }));
});

// with custom vanilla snaky_hash_klass
const W = `${S}: with custom vanilla snaky_hash_klass`;
class Custom extends SnakyHash {}
const someJson = JSON.stringify({ some_key: "some_value" });
Deno.test(`${W} uses the specified hash class when snaky is true`, async () => {
  const r = await from(someJson, { "Content-Type": "application/json" }, {
    parse: "automatic",
    snaky: true,
    snakyHashClass: Custom,
  });
  assert.ok(r.parsed instanceof Custom);
  assert.deepEqual((r.parsed as SnakyHash).toObject(), { some_key: "some_value" });
  assert.equal((r.parsed as SnakyHash).some_key, "some_value");
});
Deno.test(`${W} uses the default hash class when snaky_hash_klass is not specified`, async () => {
  const r = await from(someJson, { "Content-Type": "application/json" }, { snaky: true });
  assert.ok(!(r.parsed instanceof Custom));
  assert.equal((r.parsed as SnakyHash).constructor, SnakyHash);
});
Deno.test(`${W} doesn't convert to any special hash class when snaky is false`, async () => {
  const r = await from(someJson, { "Content-Type": "application/json" }, {
    snaky: false,
    snakyHashClass: Custom,
  });
  assert.ok(!(r.parsed instanceof SnakyHash));
  assert.equal(Object.getPrototypeOf(r.parsed), Object.prototype);
});

// serializer hooks
const top = { "a-b_c-d_e-F_G-H": "i-j_k-l_m-n_o-P_Q-R", arr: [1, 2, 3] };
const nested = { "a-b_c-d_e-F_G-H": { "i-j_k-l_m-n_o-P_Q-R": "s-t_u-v_w-X_Y-Z" }, arr: [1, 2, 3] };
function valueHooked() {
  class K extends SnakyHash {}
  Serializer.extend(K);
  K.dumpValueHooks.push(() => "banana");
  K.loadValueHooks.push(() => "asdf***qwer");
  return K;
}
function hashHooked() {
  class K extends SnakyHash {}
  Serializer.extend(K);
  K.dumpHashHooks.push((h) =>
    Object.fromEntries(Object.entries(h).map(([k, v]) => [k.replace(k.split("_")[0], "cheese"), v]))
  );
  K.loadHashHooks.push((h) =>
    Object.fromEntries(
      Object.entries(h).map(([k, v]) => [k.replace(k.split("_").at(-1)!, "pizza"), v]),
    )
  );
  return K;
}
type Case = {
  ext: string;
  klass: () => typeof SnakyHash;
  ctx: string;
  body: Record<string, unknown>;
  snaked: Record<string, unknown>;
  dump: string;
  loaded: Record<string, unknown>;
};
const cases: Case[] = [
  {
    ext: "with dump_value & load_value extensions",
    klass: valueHooked,
    ctx: "when hash with top-level hashes",
    body: top,
    snaked: { a_b_c_d_e_f_g_h: "i-j_k-l_m-n_o-P_Q-R", arr: [1, 2, 3] },
    dump: '{"a_b_c_d_e_f_g_h":"banana","arr":["banana","banana","banana"]}',
    loaded: { a_b_c_d_e_f_g_h: "asdf***qwer", arr: ["asdf***qwer", "asdf***qwer", "asdf***qwer"] },
  },
  {
    ext: "with dump_value & load_value extensions",
    klass: valueHooked,
    ctx: "when hash with nested hashes",
    body: nested,
    snaked: { a_b_c_d_e_f_g_h: { i_j_k_l_m_n_o_p_q_r: "s-t_u-v_w-X_Y-Z" }, arr: [1, 2, 3] },
    dump: '{"a_b_c_d_e_f_g_h":{"i_j_k_l_m_n_o_p_q_r":"banana"},"arr":["banana","banana","banana"]}',
    loaded: {
      a_b_c_d_e_f_g_h: { i_j_k_l_m_n_o_p_q_r: "asdf***qwer" },
      arr: ["asdf***qwer", "asdf***qwer", "asdf***qwer"],
    },
  },
  {
    ext: "with dump_hash & load_hash extensions",
    klass: hashHooked,
    ctx: "when hash with top-level hashes",
    body: top,
    snaked: { a_b_c_d_e_f_g_h: "i-j_k-l_m-n_o-P_Q-R", arr: [1, 2, 3] },
    dump: '{"cheese_b_c_d_e_f_g_h":"i-j_k-l_m-n_o-P_Q-R","cheese":[1,2,3]}',
    loaded: { cpizzaeese_b_c_d_e_f_g_h: "i-j_k-l_m-n_o-P_Q-R", pizza: [1, 2, 3] },
  },
  {
    ext: "with dump_hash & load_hash extensions",
    klass: hashHooked,
    ctx: "when hash with nested hashes",
    body: nested,
    snaked: { a_b_c_d_e_f_g_h: { i_j_k_l_m_n_o_p_q_r: "s-t_u-v_w-X_Y-Z" }, arr: [1, 2, 3] },
    dump:
      '{"cheese_b_c_d_e_f_g_h":{"cheese_j_k_l_m_n_o_p_q_r":"s-t_u-v_w-X_Y-Z"},"cheese":[1,2,3]}',
    loaded: {
      cpizzaeese_b_c_d_e_f_g_h: { cheese_j_k_l_m_n_o_p_q_pizza: "s-t_u-v_w-X_Y-Z" },
      pizza: [1, 2, 3],
    },
  },
];
const plain = (v: unknown): unknown =>
  v instanceof SnakyHash
    ? plain(v.toObject())
    : Array.isArray(v)
    ? v.map(plain)
    : v && typeof v === "object"
    ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
    : v;
for (const c of cases) {
  const d = `${S}: ${c.ext} ${c.ctx}`;
  const parsed = async (K: typeof SnakyHash) =>
    (await from(JSON.stringify(c.body), { "Content-Type": "application/json" }, {
      parse: "automatic",
      snaky: true,
      snakyHashClass: K,
    })).parsed as SnakyHash;
  Deno.test(`${d} uses the specified hash class when snaky is true`, async () => {
    const K = c.klass();
    const p = await parsed(K);
    assert.ok(p instanceof K);
    assert.deepEqual(plain(p), c.snaked);
    const [first] = Object.keys(c.snaked);
    assert.deepEqual(plain(p.get(first)), c.snaked[first]);
    assert.deepEqual(plain(p[first]), c.snaked[first]);
    assert.deepEqual(p.arr, [1, 2, 3]);
  });
  Deno.test(`${d} can dump the hash`, async () => {
    const K = c.klass();
    const p = await parsed(K);
    assert.ok(p instanceof K);
    assert.equal(K.dump(p), c.dump);
  });
  Deno.test(`${d} can load the dump, and run extensions on values`, async () => {
    const K = c.klass();
    const p = await parsed(K);
    const hydrated = K.load(K.dump(p));
    assert.ok(hydrated instanceof K);
    assert.notDeepEqual(plain(hydrated), plain(p));
    assert.deepEqual(plain(hydrated), c.loaded);
    for (const [k, v] of Object.entries(c.loaded)) {
      assert.deepEqual(plain(hydrated.get(k)), v);
      assert.deepEqual(plain(hydrated[k]), v);
    }
  });
  Deno.test(`${d} doesn't convert to any special hash class when snaky is false`, async () => {
    const K = c.klass();
    const r = await from(JSON.stringify(c.body), { "Content-Type": "application/json" }, {
      snaky: false,
      snakyHashClass: K,
    });
    assert.ok(!(r.parsed instanceof SnakyHash));
    assert.deepEqual(r.parsed, c.body);
  });
}
