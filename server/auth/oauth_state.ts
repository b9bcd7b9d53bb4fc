/**
 * The OAuth `state` of an external sign-in: everything the callback needs
 * (provider, redirect target, the client's PKCE challenge, our own PKCE
 * verifier for the provider, the OpenID nonce, the user being linked),
 * sealed into the state value itself so `/authorize` writes nothing.
 *
 * Sealing is a JWE (`dir`, A256GCM) under a key derived from JWT_SECRET with
 * HKDF: AES-GCM authenticates the whole token, so any change is refused
 * (tampering), and it also hides the PKCE verifier from whoever sees the URL
 * (the verifier must stay secret from anyone who might intercept the code).
 * The state expires after STATE_TTL seconds (server clock) and works once:
 * its random nonce is recorded in `oauth_state_uses` in the same database every
 * server process shares, so a replayed callback is refused.
 */
import { jose } from "../../deps.ts";
import type { Db } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { OAuthStateUseStore } from "../store/flow_states.ts";

/** Seconds a state is valid: the time a person may spend at the provider. */
export const STATE_TTL = 600;

/** What the state carries. */
export interface OAuthStateData {
  provider: string;
  /** Where the user goes afterwards (already checked against SITE_URL / URI_ALLOW_LIST). */
  redirectTo: string;
  /**
   * Random, unique per state (at least 128 bits): the OpenID Connect nonce
   * sent to the provider, and the id recorded when the state is used.
   */
  nonce: string;
  /** Our PKCE verifier for the provider (never shown in clear). */
  providerVerifier?: string;
  /** The client's PKCE challenge (PKCE flow: the callback answers `?code=`). */
  codeChallenge?: string;
  codeChallengeMethod?: "s256" | "plain";
  /** Linking: the signed-in user who asked. */
  linkUserId?: string;
}

/** An opened state. */
export interface OpenedState extends OAuthStateData {
  /** The state's id (its random nonce), recorded when it is used. */
  jti: string;
  exp: number;
}

/** Why a state was refused. */
export type StateProblem = "malformed" | "tampered" | "expired" | "replayed";

/** A refused state; `data` is set when the state was genuine (expired or replayed). */
export class StateError extends Error {
  constructor(readonly problem: StateProblem, readonly data?: OAuthStateData) {
    super(
      problem === "expired"
        ? "OAuth state has expired"
        : problem === "replayed"
        ? "OAuth state has already been used"
        : "OAuth state parameter is invalid",
    );
    this.name = "StateError";
  }
}

async function deriveKey(secret: string): Promise<Uint8Array> {
  const enc = new TextEncoder();
  const base = await crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, [
    "deriveBits",
  ]);
  const bits = await crypto.subtle.deriveBits(
    { name: "HKDF", hash: "SHA-256", salt: enc.encode("authsvc"), info: enc.encode("oauth-state") },
    base,
    256,
  );
  return new Uint8Array(bits);
}

/** Payload member names. */
const SHORT: Record<keyof OAuthStateData, string> = {
  provider: "p",
  redirectTo: "r",
  nonce: "n",
  providerVerifier: "v",
  codeChallenge: "c",
  codeChallengeMethod: "m",
  linkUserId: "u",
};

function dataOf(p: Record<string, unknown>): OAuthStateData | undefined {
  const s = (k: keyof OAuthStateData) => {
    const v = p[SHORT[k]];
    return typeof v === "string" ? v : undefined;
  };
  const provider = s("provider");
  const redirectTo = s("redirectTo");
  const nonce = s("nonce");
  if (!provider || !redirectTo || !nonce) return undefined;
  const m = s("codeChallengeMethod");
  return {
    provider,
    redirectTo,
    nonce,
    providerVerifier: s("providerVerifier"),
    codeChallenge: s("codeChallenge"),
    codeChallengeMethod: m === "plain" || m === "s256" ? m : undefined,
    linkUserId: s("linkUserId"),
  };
}

/** Seals, opens and consumes states. */
export class OAuthStates {
  readonly #key: Promise<Uint8Array>;
  readonly #uses: OAuthStateUseStore;

  constructor(readonly db: Db, jwtSecret: string, readonly clock: Clock) {
    this.#key = deriveKey(jwtSecret);
    this.#uses = new OAuthStateUseStore(db);
  }

  /** A state value for `data`, valid for STATE_TTL seconds from now. */
  async seal(data: OAuthStateData): Promise<string> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    // One-letter members: some providers limit `state` (X: 500 characters).
    const payload: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) {
      if (v !== undefined && k in SHORT) payload[SHORT[k as keyof OAuthStateData]] = v;
    }
    return await new jose.EncryptJWT(payload)
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setExpirationTime(now + STATE_TTL)
      .encrypt(await this.#key);
  }

  /**
   * Opens a state without using it up.
   *
   * @throws {StateError} malformed, tampered or expired
   */
  async open(state: string): Promise<OpenedState> {
    if (typeof state !== "string" || state.length === 0 || state.length > 4096) {
      throw new StateError("malformed");
    }
    try {
      const { payload } = await jose.jwtDecrypt(state, await this.#key, {
        currentDate: this.clock.now(),
        clockTolerance: 0,
        keyManagementAlgorithms: ["dir"],
        contentEncryptionAlgorithms: ["A256GCM"],
        requiredClaims: ["exp"],
      });
      const data = dataOf(payload);
      if (!data) throw new StateError("malformed");
      return { ...data, jti: data.nonce, exp: Number(payload.exp) };
    } catch (e) {
      if (e instanceof StateError) throw e;
      if (e instanceof jose.errors.JWTExpired) {
        throw new StateError("expired", dataOf(e.payload));
      }
      if (e instanceof jose.errors.JWEDecryptionFailed) throw new StateError("tampered");
      throw new StateError("malformed");
    }
  }

  /**
   * A single-use ticket for `url` (the provider URL of a link started by a
   * fetch), valid for STATE_TTL seconds: the browser that opens it gets the
   * state's cookie (api/oauth_binding.ts), so the state is bound to it.
   */
  async sealTicket(url: string): Promise<string> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    return await new jose.EncryptJWT({ t: url, n: crypto.randomUUID() })
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setExpirationTime(now + STATE_TTL)
      .encrypt(await this.#key);
  }

  /**
   * Opens a ticket and uses it up: the URL it carries.
   *
   * @throws {StateError} malformed, tampered, expired or replayed
   */
  async redeemTicket(ticket: string): Promise<string> {
    if (typeof ticket !== "string" || ticket.length === 0 || ticket.length > 8192) {
      throw new StateError("malformed");
    }
    let payload: jose.JWTPayload;
    try {
      ({ payload } = await jose.jwtDecrypt(ticket, await this.#key, {
        currentDate: this.clock.now(),
        clockTolerance: 0,
        keyManagementAlgorithms: ["dir"],
        contentEncryptionAlgorithms: ["A256GCM"],
        requiredClaims: ["exp"],
      }));
    } catch (e) {
      if (e instanceof jose.errors.JWTExpired) throw new StateError("expired");
      if (e instanceof jose.errors.JWEDecryptionFailed) throw new StateError("tampered");
      throw new StateError("malformed");
    }
    if (typeof payload.t !== "string" || typeof payload.n !== "string") {
      throw new StateError("malformed");
    }
    await this.#use(`ticket:${payload.n}`, Number(payload.exp));
    return payload.t;
  }

  /**
   * Marks an opened state used.
   *
   * @throws {StateError} replayed, when it was used before
   */
  async consume(state: OpenedState): Promise<void> {
    await this.#use(state.jti, state.exp, state);
  }

  async #use(jti: string, exp: number, state?: OpenedState): Promise<void> {
    const now = this.clock.now();
    await this.#uses.deleteExpired(now);
    if (!await this.#uses.record(jti, new Date(exp * 1000))) {
      throw new StateError("replayed", state);
    }
  }
}
