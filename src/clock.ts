/**
 * The process's clock, for timers and durations only: job times (run_at, leases) come
 * from the database's `now()`, so workers on different machines agree.
 */
export interface Clock {
  now(): number;
}

/** The real clock. */
export const systemClock: Clock = { now: () => Date.now() };
