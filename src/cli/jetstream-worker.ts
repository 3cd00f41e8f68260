import type { Errand } from "../client.js";
import { JetStreamQueue } from "../jetstream/queue.js";
import type { JetStreamQueueOptions } from "../jetstream/options.js";
import type { JetStreamWorker, JetStreamWorkerEvent } from "../jetstream/worker.js";
import type { Handlers } from "../worker/handlers.js";
import { logLine } from "./common.js";

/** How `errand worker --jetstream` runs each queue. */
export interface JetStreamRun {
  readonly handlers: Handlers;
  readonly concurrency?: number;
  readonly shutdownTimeoutMs?: number;
  readonly verbose: boolean;
}

/** The JetStream queues' workers as one: `start()` starts them all (or none), `stop()` stops them all. */
export function jetstreamWorkers(errand: Errand, queues: readonly JetStreamQueueOptions[], run: JetStreamRun): { readonly queues: readonly JetStreamQueue[]; start(): Promise<void>; stop(): Promise<void> } {
  const workers = queues.map((options) => {
    const queue = new JetStreamQueue(errand, options);
    const worker = queue.worker({
      handlers: run.handlers,
      ...(run.concurrency !== undefined ? { concurrency: run.concurrency } : {}),
      ...(run.shutdownTimeoutMs !== undefined ? { shutdownTimeoutMs: run.shutdownTimeoutMs } : {}),
      onEvent: (event) => logEvent(queue.settings.queue, event, run.verbose),
    });
    return { queue, worker };
  });
  const started: { queue: JetStreamQueue; worker: JetStreamWorker }[] = [];
  const stopAll = () =>
    Promise.all(
      started.splice(0).map(async ({ queue, worker }) => {
        await worker.stop();
        logLine({ level: "info", event: "stopped", transport: "jetstream", queue: queue.settings.queue });
      }),
    ).then(() => undefined);
  return {
    queues: workers.map((entry) => entry.queue),
    async start() {
      try {
        for (const entry of workers) {
          await entry.worker.start();
          started.push(entry);
          const { queue, stream, consumer, subject, ackWaitMs } = entry.queue.settings;
          logLine({ level: "info", event: "started", transport: "jetstream", queue, stream, consumer, subject, ackWaitMs });
        }
      } catch (error) {
        // One queue's stream is unusable: the process does not half-run.
        await stopAll();
        throw error;
      }
    },
    stop: stopAll,
  };
}

/** The JetStream worker's events as the PostgreSQL worker logs its own (job_done, job_failed, job_dead, …). */
function logEvent(queue: string, event: JetStreamWorkerEvent, verbose: boolean): void {
  if (event.type === "error") {
    logLine({ level: "error", event: "error", queue, error: event.error.message });
    return;
  }
  if (event.type === "started") return;
  const fields = { queue, job: event.id, kind: event.kind, attempt: event.attempt };
  switch (event.outcome) {
    case "done":
      if (verbose) logLine({ level: "info", event: "job_done", ...fields, ms: Math.round(event.ms) });
      return;
    case "retry":
      logLine({ level: "warn", event: "job_failed", ...fields });
      return;
    case "dead":
      logLine({ level: "error", event: "job_dead", ...fields });
      return;
    case "snoozed":
      logLine({ level: "info", event: "job_snoozed", ...fields });
      return;
    default:
      // lease_expired, returned: the message goes back to JetStream.
      logLine({ level: "warn", event: `job_${event.outcome}`, ...fields });
  }
}
