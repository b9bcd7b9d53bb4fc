/**
 * From a used refresh token to the session's live token. A rotated token's child is derived from
 * the parent's text (auth/sessions.ts: the HMAC of the parent under the server's child key,
 * stamped with its time of issue), so the live token's text is rebuilt from the presented one,
 * child by child, without the server ever storing a token in the clear; a stored child that is
 * not the one its parent derives ends the walk.
 */
import { refreshTokenKey } from "./refresh_token_format.ts";
import type { RefreshTokenRow } from "../store/refresh_tokens.ts";

/** A row of the chain below a token (RefreshTokenStore.descendants). */
export type ChainRow =
  & Pick<RefreshTokenRow, "id" | "parent_id" | "token_hash" | "revoked" | "created_at">
  & { generation: number };

/** The live token a used token leads to: its text, when it was issued, how far down it is. */
export interface LiveToken {
  token: string;
  issued_at: Date;
  /** 1: the used token's own child. */
  generation: number;
}

/**
 * The live token that the used token `token` (row id `tokenId`) leads to through `chain`, each
 * step the child its predecessor derives: `childOf(text, key)` is the text of the child `text`
 * derives, for the child stored under `key`. Null when the chain ends in a revoked token or
 * leaves the derived children.
 */
export function liveTokenOf(
  token: string,
  tokenId: number,
  chain: ChainRow[],
  childOf: (text: string, key: string) => string,
): LiveToken | null {
  let text = token;
  let parentId = tokenId;
  for (let generation = 1;; generation++) {
    let next: { text: string; row: ChainRow } | undefined;
    for (const row of chain) {
      if (row.generation !== generation || row.parent_id !== parentId) continue;
      const child = childOf(text, row.token_hash);
      if (refreshTokenKey(child) === row.token_hash) next = { text: child, row };
    }
    if (!next) return null;
    if (!next.row.revoked) {
      return { token: next.text, issued_at: next.row.created_at, generation };
    }
    text = next.text;
    parentId = next.row.id;
  }
}
