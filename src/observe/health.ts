import { checkKeys, positiveMs } from "../validate.js";
import type { WorkerEvent } from "../worker/worker.js";
import { EventLoopLag } from "./event-loop-lag.js";

/** How `GET /healthz` decides; see {@link Health}. */
export interface HealthOptions {
  /** Unhealthy when the event loop was stuck longer than this within `windowMs`. Default 1000 ms. */
  readonly maxEventLoopLagMs?: number;
  /** How far back the event-loop lag is looked at. Default 10 s, a typical probe period. */
  readonly windowMs?: number;
}

/** What `GET /healthz` answers (200 when `status` is `"ok"`, else 503). */
export interface HealthReport {
  readonly status: "ok" | "unhealthy";
  /** The longest event-loop delay within the window. */
  readonly eventLoopLagMs: number;
  readonly maxEventLoopLagMs: number;
  /** Workers reported through `onEvent`: started and not stopped, and stopped. */
  readonly workers: { readonly running: number; readonly stopped: number };
  /** Why it is unhealthy. */
  readonly reason?: string;
}

/** Default of {@link HealthOptions.maxEventLoopLagMs}. */
export const defaultMaxEventLoopLagMs = 1000;

/**
 * Liveness for a supervisor (a Kubernetes `livenessProbe`, systemd, a load balancer):
 * unhealthy while the event loop is blocked (a handler spinning, or too much synchronous
 * work — see `isolated()`) and once every worker fed to `onEvent` has stopped. A process
 * whose loop is blocked right now cannot answer at all; the probe's timeout covers that.
 */
export class Health {
  readonly #maxLagMs: number;
  readonly #lag: EventLoopLag;
  readonly #running = new Set<string>();
  #stopped = 0;

  constructor(options: HealthOptions = {}) {
    checkKeys(options, "health", ["maxEventLoopLagMs", "windowMs"]);
    this.#maxLagMs = positiveMs(options.maxEventLoopLagMs ?? defaultMaxEventLoopLagMs, "health.maxEventLoopLagMs");
    this.#lag = new EventLoopLag({ windowMs: positiveMs(options.windowMs ?? 10_000, "health.windowMs") });
  }

  /** Starts measuring the event loop (an unref'd timer). */
  start(): void {
    this.#lag.start();
  }

  stop(): void {
    this.#lag.stop();
  }

  /** Feed a worker's events here to include it: a worker that stopped makes the process unhealthy. */
  readonly onEvent = (event: WorkerEvent): void => {
    if (event.type === "started") this.#running.add(event.workerId);
    else if (event.type === "stopped" && this.#running.delete(event.workerId)) this.#stopped++;
  };

  report(): HealthReport {
    const eventLoopLagMs = this.#lag.lagMs();
    const workers = { running: this.#running.size, stopped: this.#stopped };
    const base = { eventLoopLagMs, maxEventLoopLagMs: this.#maxLagMs, workers };
    if (eventLoopLagMs > this.#maxLagMs) return { status: "unhealthy", ...base, reason: `the event loop was blocked for ${eventLoopLagMs} ms (limit ${this.#maxLagMs} ms)` };
    if (workers.stopped > 0 && workers.running === 0) return { status: "unhealthy", ...base, reason: "the worker has stopped" };
    return { status: "ok", ...base };
  }
}
