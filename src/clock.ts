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
 * A clock that only moves forward (`performance.now()`), for measuring delays: a wall
 * clock set back or forward by NTP would show as a stall or hide one.
 */
export const monotonicClock: Clock = { now: () => performance.now() };
