/**
 * The process's clock, for timers and durations only: job times (run_at, leases) come
 * from the database's `now()`, so workers on different machines agree.
 */
export interface Clock {
  now(): number;
}

/** The real clock. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock that only moves forward, for measuring delays: a wall clock set back or forward
 * by NTP would show as a stall or hide one. Read as epoch milliseconds (the process's
 * start on the wall clock, `performance.timeOrigin`, plus `performance.now()`). The
 * worker's own copy of its leases and its trust in its row (src/worker/presence.ts) are
 * measured on it: set back, a wall clock would stretch them past what the database allows.
 */
export const monotonicClock: Clock = { now: () => performance.timeOrigin + performance.now() };
