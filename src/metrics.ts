/**
 * `errand/metrics`: Prometheus gauges and counters, and a server for `/metrics`. An entry
 * of its own because it loads prom-client, which `errand` itself does not.
 *
 * @example
 * ```ts
 * import { startMetricsServer } from "errand/metrics";
 *
 * const metrics = await startMetricsServer({ port: 9464, stats: () => errand.stats() });
 * const worker = errand.worker({ handlers, onEvent: metrics.onEvent });
 * ```
 *
 * @module
 */
export { registerQueueGauges, metricsFromEvents } from "./observe/metrics.js";
export { registerJetStreamGauges } from "./jetstream/metrics.js";
export { startMetricsServer, type MetricsServer, type MetricsServerOptions } from "./observe/metrics-server.js";
