/**
 * The lifecycle every background service shares (the purger, the rescuer, the scheduler,
 * the alerter): `start()` runs once now and then on a timer, `stop()` waits for a run in
 * progress, and `runOnce()` is one run on demand — tests call it instead of waiting for
 * a timer.
 */
export interface Service<Result = unknown> {
  /** Runs once now, then again an interval after each run ends, until {@link stop}. Resolves after the first run; a second call does nothing. */
  start(): Promise<void>;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
  /** One run now, whether or not the service was started. */
  runOnce(): Promise<Result>;
}

/**
 * The timer behind every {@link Service}: calls `run` now, then `intervalMs` after each
 * call settles, so runs never overlap. `run` reports its own errors and must not reject.
 */
export class Repeater {
  readonly #run: () => Promise<void>;
  readonly #intervalMs: number;
  readonly #keepAlive: boolean;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #current: Promise<void> = Promise.resolve();

  /** `keepAlive`: the waiting timer holds the process open (by default it does not). */
  constructor(run: () => Promise<void>, intervalMs: number, options: { readonly keepAlive?: boolean } = {}) {
    this.#run = run;
    this.#intervalMs = intervalMs;
    this.#keepAlive = options.keepAlive === true;
  }

  /** See {@link Service.start}. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await this.#loop();
  }

  /** See {@link Service.stop}. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#current;
  }

  async #loop(): Promise<void> {
    if (!this.#running) return;
    this.#current = this.#run();
    await this.#current;
    if (!this.#running) return;
    this.#timer = setTimeout(() => void this.#loop(), this.#intervalMs);
    if (!this.#keepAlive) this.#timer.unref();
  }
}
