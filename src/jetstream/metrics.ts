/**
 * Prometheus gauges of JetStream queues (part of `errand/metrics`, which loads
 * prom-client): each scrape reads every queue's {@link JetStreamQueue.stats}.
 */
import { Gauge, type Registry } from "prom-client";
import { defaultJetStreamStatsTimeoutMs } from "../defaults.js";
import type { JetStreamQueueStats, JetStreamStatsSource } from "./queue.js";

/**
 * Registers `errand_jetstream_jobs{queue, state}` — state `pending` (in the stream, not yet
 * delivered), `ack_pending` (delivered, not acknowledged), `redelivered`, `outbox` (committed,
 * not yet relayed) — and `errand_jetstream_up{queue}` (1 when the last read succeeded).
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * registerJetStreamGauges(registry, [media]);
 * ```
 */
export function registerJetStreamGauges(registry: Registry, queues: readonly JetStreamStatsSource[]): void {
  let reading: Promise<(JetStreamQueueStats | null)[]> | undefined;
  // One read per scrape, shared by both gauges.
  const read = () => (reading ??= Promise.all(queues.map((q) => q.stats({ timeoutMs: defaultJetStreamStatsTimeoutMs }).catch(() => null))).finally(() => setTimeout(() => (reading = undefined), 500)));
  new Gauge({
    name: "errand_jetstream_up",
    help: "1 when the last read of the JetStream queue's consumer info succeeded",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      const all = await read();
      queues.forEach((q, i) => this.set({ queue: q.settings.queue }, all[i] ? 1 : 0));
    },
  });
  new Gauge({
    name: "errand_jetstream_jobs",
    help: "jobs of a JetStream queue: pending in the stream, ack_pending (delivered, not acknowledged), redelivered, outbox (committed, not yet relayed)",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const stats of await read()) {
        if (!stats) continue;
        this.set({ queue: stats.queue, state: "pending" }, stats.pending);
        this.set({ queue: stats.queue, state: "ack_pending" }, stats.ackPending);
        this.set({ queue: stats.queue, state: "redelivered" }, stats.redelivered);
        this.set({ queue: stats.queue, state: "outbox" }, stats.outbox);
      }
    },
  });
}
