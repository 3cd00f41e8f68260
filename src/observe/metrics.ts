import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { systemClock } from "../clock.js";
import type { WorkerEvent } from "../worker/worker.js";
import type { QueueStats } from "./stats.js";

/** How long one stats snapshot serves every gauge of a scrape. */
const snapshotMs = 1_000;

/**
 * Registers gauges that read the queue's figures (one stats query per scrape) into
 * `registry`: `errand_jobs{kind,state}`, `errand_oldest_ready_age_seconds{kind}`,
 * `errand_expired_leases{kind}`, `errand_recent_outcomes{kind,outcome,window}`,
 * `errand_failure_rate{kind,window}`, `errand_queue_jobs{queue,state}` (ready, scheduled,
 * running), `errand_queue_limit{queue}`, `errand_limit_jobs{key,state}` (running, ready, rate_held),
 * `errand_limit_concurrency{key}`, `errand_unserved_jobs{queue,kind}`, `errand_paused{scope,name}` (1 per paused queue or kind), `errand_outbox_messages`,
 * `errand_outbox_oldest_age_seconds` and `errand_stats_up` (0 when the query failed;
 * the other gauges then keep their last values out of the scrape).
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * registerQueueGauges(registry, () => errand.stats());
 * ```
 */
export function registerQueueGauges(registry: Registry, read: () => Promise<QueueStats>): void {
  let cached: { at: number; stats: Promise<QueueStats | null> } | undefined;
  const snapshot = () => {
    const now = systemClock.now();
    if (!cached || now - cached.at > snapshotMs) cached = { at: now, stats: read().catch(() => null) };
    return cached.stats;
  };
  new Gauge({
    name: "errand_stats_up",
    help: "1 when the last stats query succeeded",
    registers: [registry],
    async collect() {
      this.set((await snapshot()) ? 1 : 0);
    },
  });
  const gauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge, stats: QueueStats) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const stats = await snapshot();
        if (!stats) return;
        this.reset();
        fill(this, stats);
      },
    });
  gauge("errand_jobs", "jobs by kind and state (ready = due now, scheduled = due later)", ["kind", "state"], (g, stats) => {
    for (const [kind, s] of Object.entries(stats.kinds)) {
      for (const state of ["ready", "scheduled", "running", "done", "dead", "cancelled"] as const) g.set({ kind, state }, s[state]);
    }
  });
  gauge("errand_oldest_ready_age_seconds", "how long the oldest due job has waited", ["kind"], (g, stats) => {
    for (const [kind, s] of Object.entries(stats.kinds)) if (s.oldestReadyAgeMs !== null) g.set({ kind }, s.oldestReadyAgeMs / 1000);
  });
  gauge("errand_expired_leases", "running jobs whose lease expired (worker died or overran)", ["kind"], (g, stats) => {
    for (const [kind, s] of Object.entries(stats.kinds)) g.set({ kind }, s.expiredLeases);
  });
  gauge("errand_recent_outcomes", "outcomes over the last minute or hour, from the database (all workers)", ["kind", "outcome", "window"], (g, stats) => {
    for (const [kind, s] of Object.entries(stats.kinds)) {
      for (const [window, w] of [["1m", s.lastMinute], ["1h", s.lastHour]] as const) {
        g.set({ kind, outcome: "completed", window }, w.completed);
        g.set({ kind, outcome: "failed", window }, w.failed);
        g.set({ kind, outcome: "died", window }, w.died);
        g.set({ kind, outcome: "timed_out", window }, w.timedOut);
        g.set({ kind, outcome: "cancelled", window }, w.cancelled);
      }
    }
  });
  gauge("errand_queue_jobs", "jobs by queue and state (ready = due now, scheduled = due later, running)", ["queue", "state"], (g, stats) => {
    for (const [queue, q] of Object.entries(stats.queues)) {
      for (const state of ["ready", "scheduled", "running"] as const) g.set({ queue, state }, q[state]);
    }
  });
  gauge("errand_queue_limit", "a queue's global concurrency limit (errand.limits.setQueue), to compare with errand_queue_jobs{state=\"running\"}", ["queue"], (g, stats) => {
    for (const [queue, q] of Object.entries(stats.queues)) if (q.limit !== null) g.set({ queue }, q.limit);
  });
  gauge("errand_limit_jobs", "jobs under a concurrency-key limit (key: the limit's key or prefix) by state: running, ready, rate_held (due, held back by the rate now)", ["key", "state"], (g, stats) => {
    for (const l of stats.limits) {
      g.set({ key: l.key, state: "running" }, l.running);
      g.set({ key: l.key, state: "ready" }, l.ready);
      g.set({ key: l.key, state: "rate_held" }, l.rateHeld);
    }
  });
  gauge("errand_limit_concurrency", "a concurrency-key limit's concurrency (errand.limits.set)", ["key"], (g, stats) => {
    for (const l of stats.limits) if (l.concurrency !== null) g.set({ key: l.key }, l.concurrency);
  });
  gauge("errand_unserved_jobs", "ready jobs no live worker serves (no worker seen within a minute has their queue and a handler for their kind): a mistyped kind, or a queue no worker runs", ["queue", "kind"], (g, stats) => {
    for (const u of stats.unserved) g.set({ queue: u.queue, kind: u.kind }, u.ready);
  });
  gauge("errand_paused", "1 for each paused queue (scope=queue) and kind (scope=kind): workers start none of its jobs", ["scope", "name"], (g, stats) => {
    for (const [queue, q] of Object.entries(stats.queues)) if (q.paused) g.set({ scope: "queue", name: queue }, 1);
    for (const kind of stats.pausedKinds) g.set({ scope: "kind", name: kind }, 1);
  });
  gauge("errand_outbox_messages", "outbox messages waiting for the relay", [], (g, stats) => {
    if (stats.outbox) g.set(stats.outbox.messages);
  });
  gauge("errand_outbox_oldest_age_seconds", "how long the oldest outbox message has waited (0 when none waits)", [], (g, stats) => {
    if (stats.outbox) g.set((stats.outbox.oldestAgeMs ?? 0) / 1000);
  });
  gauge("errand_failure_rate", "failed ÷ (completed + failed) over the window", ["kind", "window"], (g, stats) => {
    for (const [kind, s] of Object.entries(stats.kinds)) {
      if (s.lastMinute.failureRate !== null) g.set({ kind, window: "1m" }, s.lastMinute.failureRate);
      if (s.lastHour.failureRate !== null) g.set({ kind, window: "1h" }, s.lastHour.failureRate);
    }
  });
}

/**
 * Registers this process's job metrics in `registry` and returns a listener for a
 * worker's `onEvent`: `errand_jobs_finished_total{kind,outcome}`,
 * `errand_job_duration_seconds{kind,outcome}` (run time), `errand_job_wait_seconds{kind}`
 * (from due to started; the start is the process clock, the due time the database's),
 * `errand_worker_errors_total{during}`, `errand_leases_lost_total` and
 * `errand_jobs_rescued_total{to}`.
 *
 * @example
 * ```ts
 * const onMetrics = metricsFromEvents(registry);
 * errand.worker({ handlers, onEvent: (event) => { log(event); onMetrics(event); } });
 * ```
 */
export function metricsFromEvents(registry: Registry): (event: WorkerEvent) => void {
  const registers = [registry];
  const finished = new Counter({ name: "errand_jobs_finished_total", help: "handler runs by outcome (done, failed = will retry, dead, snoozed)", labelNames: ["kind", "outcome"], registers });
  const duration = new Histogram({
    name: "errand_job_duration_seconds",
    help: "handler run time",
    labelNames: ["kind", "outcome"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers,
  });
  const wait = new Histogram({
    name: "errand_job_wait_seconds",
    help: "time from a job being due (run_at) to its handler starting",
    labelNames: ["kind"],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600],
    registers,
  });
  const errors = new Counter({ name: "errand_worker_errors_total", help: "worker errors by the step that failed", labelNames: ["during"], registers });
  const lost = new Counter({ name: "errand_leases_lost_total", help: "jobs whose lease was lost while running or buffered", registers });
  const rescued = new Counter({ name: "errand_jobs_rescued_total", help: "expired leases rescued, by where the job went", labelNames: ["to"], registers });

  return (event) => {
    switch (event.type) {
      case "job_done":
      case "job_failed":
      case "job_dead": {
        const outcome = event.type.slice(4);
        const { kind } = event.job;
        finished.inc({ kind, outcome });
        duration.observe({ kind, outcome }, event.durationMs / 1000);
        const startedAt = systemClock.now() - event.durationMs;
        wait.observe({ kind }, Math.max(0, (startedAt - event.job.runAt.getTime()) / 1000));
        return;
      }
      case "job_snoozed":
        finished.inc({ kind: event.job.kind, outcome: "snoozed" });
        return;
      case "error":
        errors.inc({ during: event.during });
        return;
      case "lease_lost":
        lost.inc(event.jobIds.length);
        return;
      case "rescued":
        if (event.ready) rescued.inc({ to: "ready" }, event.ready);
        if (event.dead) rescued.inc({ to: "dead" }, event.dead);
        return;
      default:
        return;
    }
  };
}

export { Registry };
