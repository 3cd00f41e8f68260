import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry, collectDefaultMetrics } from "prom-client";
import type { WorkerEvent } from "../worker/worker.js";
import { metricsFromEvents, registerQueueGauges } from "./metrics.js";
import type { QueueStats } from "./stats.js";

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Interface to bind. Default all (`0.0.0.0`). */
  readonly host?: string;
  /** Stats source for the queue gauges (usually `() => errand.stats()`); omit to serve only this process's metrics. */
  readonly stats?: () => Promise<QueueStats>;
  /** Registry to serve. Default a new one with Node's process metrics. */
  readonly registry?: Registry;
}

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** The port it listens on. */
  readonly port: number;
  readonly registry: Registry;
  /** Feed a worker's events here (`onEvent`) for the job counters and histograms. */
  readonly onEvent: (event: WorkerEvent) => void;
  close(): Promise<void>;
}

/**
 * Serves Prometheus' text format at `GET /metrics`: the queue gauges (if `stats` is
 * given), job metrics fed through `onEvent`, and Node's process metrics.
 *
 * @example
 * ```ts
 * const metrics = await startMetricsServer({ port: 9464, stats: () => errand.stats() });
 * const worker = errand.worker({ handlers, onEvent: metrics.onEvent });
 * ```
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const registry = options.registry ?? new Registry();
  if (!options.registry) collectDefaultMetrics({ register: registry });
  if (options.stats) registerQueueGauges(registry, options.stats);
  const onEvent = metricsFromEvents(registry);
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: try GET /metrics\n");
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
      (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    registry,
    onEvent,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
