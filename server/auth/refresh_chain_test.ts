/**
 * The walk from a used refresh token to the live one, without a database: chains are built as
 * RefreshTokenStore.descendants reads them, with a stand-in derivation (the child of `t` is
 * `t/`), which is all the walk relies on.
 */
import assert from "node:assert/strict";
import { type ChainRow, liveTokenOf } from "./refresh_chain.ts";
import { refreshTokenKey } from "./refresh_token_format.ts";

const childOf = (text: string) => `${text}/`;
const AT = new Date("2026-01-01T12:00:00Z");

/** The rows below token 1 ("t"): each the derived child of the one before, the last live. */
function chain(length: number): ChainRow[] {
  const rows: ChainRow[] = [];
  let text = "t";
  for (let g = 1; g <= length; g++) {
    text = childOf(text);
    rows.push({
      id: g + 1,
      parent_id: g,
      token_hash: refreshTokenKey(text),
      revoked: g < length,
      created_at: new Date(AT.getTime() + g * 1000),
      generation: g,
    });
  }
  return rows;
}

Deno.test("the live token is rebuilt from the used one, however far down", () => {
  assert.deepEqual(liveTokenOf("t", 1, chain(1), childOf), {
    token: "t/",
    issued_at: new Date(AT.getTime() + 1000),
    generation: 1,
  });
  const far = liveTokenOf("t", 1, chain(5), childOf);
  assert.equal(far?.token, "t/////");
  assert.equal(far?.generation, 5);
});

Deno.test("no live token: the chain ends revoked, is empty, or is read from another token", () => {
  const ended = chain(3).map((r) => ({ ...r, revoked: true }));
  assert.equal(liveTokenOf("t", 1, ended, childOf), null);
  assert.equal(liveTokenOf("t", 1, [], childOf), null);
  assert.equal(liveTokenOf("u", 1, chain(2), childOf), null, "another text derives other keys");
});

Deno.test("a stored child the token does not derive ends the walk; a derived sibling is taken", () => {
  const rows = chain(2);
  const foreign = { ...rows[0], id: 9, token_hash: refreshTokenKey("stranger"), revoked: false };
  assert.equal(liveTokenOf("t", 1, [foreign], childOf), null);
  assert.equal(liveTokenOf("t", 1, [foreign, ...rows], childOf)?.token, "t//");
});
