import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry, collectDefaultMetrics } from "prom-client";
import { defaultMetricsHost } from "../defaults.js";
import type { WorkerEvent } from "../worker/worker.js";
import { Health, type HealthOptions, type HealthReport } from "./health.js";
import { metricsFromEvents, registerQueueGauges } from "./metrics.js";
import type { QueueStats } from "./stats.js";

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Interface to bind. Default `127.0.0.1` (/metrics has no authentication); `0.0.0.0` for a scraper or probe on another host. */
  readonly host?: string;
  /** Stats source for the queue gauges (usually `() => errand.stats()`); omit to serve only this process's metrics. */
  readonly stats?: () => Promise<QueueStats>;
  /** Registry to serve. Default a new one with Node's process metrics. */
  readonly registry?: Registry;
  /** When `GET /healthz` answers 503 (event-loop lag limit, default 1 s). */
  readonly health?: HealthOptions;
}

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** The port it listens on. */
  readonly port: number;
  readonly registry: Registry;
  /** Feed a worker's events here (`onEvent`) for the job counters and histograms, and for `/healthz`. */
  readonly onEvent: (event: WorkerEvent) => void;
  /** What `GET /healthz` would answer now. */
  health(): HealthReport;
  close(): Promise<void>;
}

/**
 * Serves Prometheus' text format at `GET /metrics`: the queue gauges (if `stats` is
 * given), job metrics fed through `onEvent`, and Node's process metrics. `GET /healthz`
 * is a liveness probe: 200 with a JSON {@link HealthReport}, or 503 when the event loop
 * was blocked longer than `health.maxEventLoopLagMs` in the last 10 s or the worker fed
 * through `onEvent` has stopped.
 *
 * @example
 * ```ts
 * const metrics = await startMetricsServer({ port: 9464, stats: () => errand.stats() });
 * const worker = errand.worker({ handlers, onEvent: metrics.onEvent });
 * ```
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const health = new Health(options.health); // validates first: a bad option starts nothing
  const registry = options.registry ?? new Registry();
  if (!options.registry) collectDefaultMetrics({ register: registry });
  if (options.stats) registerQueueGauges(registry, options.stats);
  const countEvent = metricsFromEvents(registry);
  const onEvent = (event: WorkerEvent) => {
    health.onEvent(event);
    countEvent(event);
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/healthz") {
      const report = health.report();
      res.writeHead(report.status === "ok" ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" }).end(`${JSON.stringify(report)}\n`);
      return;
    }
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: try GET /metrics or GET /healthz\n");
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
      (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? defaultMetricsHost, () => resolve());
  });
  health.start();
  return {
    port: (server.address() as AddressInfo).port,
    registry,
    onEvent,
    health: () => health.report(),
    close: () => {
      health.stop();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
