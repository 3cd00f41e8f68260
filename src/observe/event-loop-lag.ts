import { type Clock, monotonicClock } from "../clock.js";

/** Options of {@link EventLoopLag}. */
export interface EventLoopLagOptions {
  /** How far back {@link EventLoopLag.lagMs} looks. Default 10 s (a typical probe period). */
  readonly windowMs?: number;
  /** How often the loop is sampled. Default 100 ms. */
  readonly intervalMs?: number;
  readonly clock?: Clock;
}

/**
 * Measures how late a timer fires: the time the event loop was busy and could run
 * nothing else. A handler that spins blocks every timer, heartbeat and request of the
 * process; this is how a liveness probe can tell.
 */
export class EventLoopLag {
  readonly #windowMs: number;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  /** Delays seen in the window, oldest first. */
  #samples: { readonly at: number; readonly lagMs: number }[] = [];
  #last = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: EventLoopLagOptions = {}) {
    this.#windowMs = options.windowMs ?? 10_000;
    this.#intervalMs = options.intervalMs ?? 100;
    this.#clock = options.clock ?? monotonicClock;
  }

  /** Starts sampling. The timer does not keep the process alive. */
  start(): void {
    if (this.#timer) return;
    this.#last = this.#clock.now();
    this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * The longest delay in the last `windowMs`, counting the current one: a request served
   * right after a long block sees it even before the sampling timer has caught up.
   */
  lagMs(): number {
    const now = this.#clock.now();
    let max = Math.max(0, now - this.#last - this.#intervalMs);
    for (const sample of this.#samples) if (sample.at >= now - this.#windowMs && sample.lagMs > max) max = sample.lagMs;
    return Math.round(max);
  }

  #tick(): void {
    const now = this.#clock.now();
    const lagMs = now - this.#last - this.#intervalMs;
    this.#last = now;
    // Only delays worth reporting are kept: a healthy loop stores nothing.
    if (lagMs >= 10) this.#samples.push({ at: now, lagMs });
    while (this.#samples.length > 0 && this.#samples[0]!.at < now - this.#windowMs) this.#samples.shift();
  }
}
