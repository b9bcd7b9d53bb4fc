/** The pool's settings (pool.ts), their defaults, and what it reports for metrics. */

/** Pool settings. */
export interface PoolOptions {
  /** Connections at most. */
  max: number;
  /** Connections single statements spread over before they are pipelined. */
  shared: number;
  /** Queries in flight on one connection at most. */
  maxPipeline: number;
  /** A connection with fewer queries in flight than this takes the next statement. */
  spillAt: number;
  /** A connection with this many queries in flight takes no more of the current tick's batch. */
  batchMax: number;
  /** A connection whose oldest query is older than this takes no new ones while others can. */
  stallMs: number;
  /** Idle connections are closed after this long. */
  idleTimeoutMs: number;
  /** How often a caller that has waited `stallMs` is asked again whether it has gone. */
  watchMs: number;
}

/** Connections by state, for metrics. */
export interface PoolStats {
  /** Open, nothing in flight, not reserved. */
  idle: number;
  /** Open with queries in flight or reserved (retiring ones included). */
  used: number;
  /** Connections at most. */
  max: number;
  /** Callers waiting for a connection. */
  pending: number;
}

/** Defaults: see PoolOptions. */
export const POOL_DEFAULTS: Omit<PoolOptions, "max"> = {
  shared: 4,
  maxPipeline: 128,
  spillAt: 16,
  batchMax: 32,
  stallMs: 100,
  idleTimeoutMs: 60_000,
  watchMs: 50,
};
