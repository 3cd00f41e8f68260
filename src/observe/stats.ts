import { defaultJetStreamStatsTimeoutMs } from "../defaults.js";
import type { Driver } from "../driver/types.js";
import type { JetStreamQueueStats, JetStreamStatsSource } from "../jetstream/queue.js";
import { type LimitInfo, readLimits } from "../limits.js";
import { type QueueDepth, readQueueSettings } from "../queues.js";
import { observeQueriesFor } from "../sql/observe.js";
import { outboxQueriesFor } from "../sql/outbox.js";

/** Outcomes over a recent window. */
export interface WindowStats {
  /** Jobs that completed. */
  readonly completed: number;
  /** Failed attempts: errors (retried or not) and expired leases. */
  readonly failed: number;
  /** Jobs that became dead. */
  readonly died: number;
  /** Attempts that ran past their maximum run time (also counted in `failed`). */
  readonly timedOut: number;
  /** Jobs cancelled (`errand.cancel`). */
  readonly cancelled: number;
  /** failed ÷ (completed + failed), or null with no attempts in the window. */
  readonly failureRate: number | null;
}

/** The figures for one kind, or for all kinds together. */
export interface KindStats {
  /** Ready and due now. */
  readonly ready: number;
  /** Ready but due later (delayed, or waiting out a backoff). */
  readonly scheduled: number;
  readonly running: number;
  /** Done jobs still in the table (the pruner deletes them after the retention). */
  readonly done: number;
  readonly dead: number;
  /** Cancelled jobs still in the table (`errand.cancel`; the purger deletes them with the done ones). */
  readonly cancelled: number;
  /** How long the oldest due job has waited, in ms (null when none is due). */
  readonly oldestReadyAgeMs: number | null;
  /** Running jobs whose lease has expired (their worker died or overran); the rescuer returns them. */
  readonly expiredLeases: number;
  /** The last minute (buckets of 10 s: 50–60 s). */
  readonly lastMinute: WindowStats;
  /** The last hour (buckets of 10 s). */
  readonly lastHour: WindowStats;
}

/** The outbox (errand.publish): messages not yet relayed. */
export interface OutboxStats {
  /** Messages waiting for the relay. */
  readonly messages: number;
  /** How long the oldest waiting message has waited, in ms (null when none waits). */
  readonly oldestAgeMs: number | null;
}

/** A snapshot of the queue. */
export interface QueueStats {
  /** The outbox's backlog (present when read from the database). */
  readonly outbox?: OutboxStats;
  /** The database's time of the snapshot. */
  readonly at: Date;
  /** All kinds together. */
  readonly total: KindStats;
  /** Per kind, in name order; kinds with nothing to report are absent. */
  readonly kinds: Readonly<Record<string, KindStats>>;
  /** Per queue: ready, scheduled, running, paused (name order; a queue with no ready or running job is absent unless paused). */
  readonly queues: Readonly<Record<string, QueueDepth>>;
  /** The kinds paused now (`errand.pause({ kind })`), in name order. */
  readonly pausedKinds: readonly string[];
  /** Every concurrency-key limit (`errand.limits.set`): running vs its limit, ready, and held back by its rate now. */
  readonly limits: readonly LimitInfo[];
  /**
   * Ready jobs that no live worker serves (no worker seen within a minute has both their
   * queue and a handler for their kind), per queue and kind: a mistyped kind, or a queue no
   * worker was given. Empty when every ready job has a worker.
   */
  readonly unserved: readonly UnservedJobs[];
  /**
   * The JetStream queues this client knows (each `new JetStreamQueue(errand, …)`), in the
   * order created: their figures, or `error` when NATS did not answer in time (2 s) or the
   * queue has no consumer yet. Absent when there are none.
   */
  readonly jetstream?: readonly JetStreamQueueReport[];
}

/** A JetStream queue in {@link QueueStats}: its figures, or why they could not be read. */
export type JetStreamQueueReport = JetStreamQueueStats | { readonly queue: string; readonly error: string };

/** Ready jobs of one queue and kind that no live worker would claim. */
export interface UnservedJobs {
  readonly queue: string;
  readonly kind: string;
  /** Ready jobs (due now or later). */
  readonly ready: number;
}

interface StatsRow {
  at: Date | string;
  queue: string | null;
  kind: string | null;
  ready: string | number | null;
  scheduled: string | number | null;
  oldest_ready_ms: string | number | null;
  running: string | number | null;
  expired: string | number | null;
  unserved: string | number | null;
  dead: string | number | null;
  done: string | number | null;
  cancelled: string | number | null;
  done_1m: string | number | null;
  failed_1m: string | number | null;
  died_1m: string | number | null;
  timed_out_1m: string | number | null;
  cancelled_1m: string | number | null;
  done_1h: string | number | null;
  failed_1h: string | number | null;
  died_1h: string | number | null;
  timed_out_1h: string | number | null;
  cancelled_1h: string | number | null;
}

/**
 * Reads the queue's figures: the jobs in one statement (see `stats` in src/sql/observe.ts
 * for what it costs), beside the small tables of pauses, limits and the outbox. Usually
 * called as `errand.stats()`.
 */
export async function readStats(driver: Driver, schema: string, jetstreamQueues: readonly JetStreamStatsSource[] = []): Promise<QueueStats> {
  const [{ rows }, settings, backlog, limits, jetstream] = await Promise.all([
    driver.run<StatsRow>(observeQueriesFor(schema).stats, []),
    readQueueSettings(driver, schema),
    driver.run<{ messages: string | number; oldest_ms: string | number | null }>(outboxQueriesFor(schema).backlog, []),
    readLimits(driver, schema),
    // NATS being down must not fail the PostgreSQL figures: each queue answers or says why not.
    Promise.all(
      jetstreamQueues.map((queue) =>
        queue.stats({ timeoutMs: defaultJetStreamStatsTimeoutMs }).catch((error: unknown): JetStreamQueueReport => ({ queue: queue.settings.queue, error: error instanceof Error ? error.message : String(error) })),
      ),
    ),
  ]);
  const at = new Date(rows[0]!.at);
  // The rows come per queue and kind (the waiting and running jobs) and per kind (the history, queue null).
  const perKind = new Map<string, KindStats[]>();
  const depths = new Map<string, { ready: number; scheduled: number; running: number }>();
  const unserved: UnservedJobs[] = [];
  for (const row of rows) {
    if (row.kind === null) continue;
    const parts = perKind.get(row.kind) ?? [];
    parts.push(toKindStats(row));
    perKind.set(row.kind, parts);
    if (row.queue === null) continue;
    const depth = depths.get(row.queue) ?? { ready: 0, scheduled: 0, running: 0 };
    depths.set(row.queue, { ready: depth.ready + n(row.ready), scheduled: depth.scheduled + n(row.scheduled), running: depth.running + n(row.running) });
    if (n(row.unserved) > 0) unserved.push({ queue: row.queue, kind: row.kind, ready: n(row.unserved) });
  }
  const kinds: Record<string, KindStats> = {};
  for (const [kind, parts] of perKind) kinds[kind] = parts.length === 1 ? parts[0]! : sumStats(parts);
  const queues: Record<string, QueueDepth> = {};
  for (const queue of [...new Set([...depths.keys(), ...settings.queues.keys()])].sort(byName)) {
    const { paused, limit } = settings.queues.get(queue) ?? { paused: false, limit: null };
    queues[queue] = { ...(depths.get(queue) ?? { ready: 0, scheduled: 0, running: 0 }), paused, limit };
  }
  unserved.sort((a, b) => byName(a.queue, b.queue) || byName(a.kind, b.kind));
  const { messages, oldest_ms } = backlog.rows[0]!;
  const outbox = { messages: Number(messages), oldestAgeMs: oldest_ms === null ? null : Math.max(0, Math.round(Number(oldest_ms))) };
  return { at, total: sumStats(Object.values(kinds)), kinds, queues, pausedKinds: settings.pausedKinds, limits, unserved, outbox, ...(jetstream.length > 0 ? { jetstream } : {}) };
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function toKindStats(row: StatsRow): KindStats {
  return {
    ready: n(row.ready),
    scheduled: n(row.scheduled),
    running: n(row.running),
    done: n(row.done),
    dead: n(row.dead),
    cancelled: n(row.cancelled),
    oldestReadyAgeMs: row.oldest_ready_ms === null ? null : Math.max(0, Math.round(Number(row.oldest_ready_ms))),
    expiredLeases: n(row.expired),
    lastMinute: windowStats(n(row.done_1m), n(row.failed_1m), n(row.died_1m), n(row.timed_out_1m), n(row.cancelled_1m)),
    lastHour: windowStats(n(row.done_1h), n(row.failed_1h), n(row.died_1h), n(row.timed_out_1h), n(row.cancelled_1h)),
  };
}

/** Adds up per-kind figures (the oldest age is the maximum). */
export function sumStats(list: readonly KindStats[]): KindStats {
  const add = (pick: (s: KindStats) => number) => list.reduce((sum, s) => sum + pick(s), 0);
  const ages = list.map((s) => s.oldestReadyAgeMs).filter((a): a is number => a !== null);
  const window = (pick: (s: KindStats) => WindowStats) =>
    windowStats(add((s) => pick(s).completed), add((s) => pick(s).failed), add((s) => pick(s).died), add((s) => pick(s).timedOut), add((s) => pick(s).cancelled));
  return {
    ready: add((s) => s.ready),
    scheduled: add((s) => s.scheduled),
    running: add((s) => s.running),
    done: add((s) => s.done),
    dead: add((s) => s.dead),
    cancelled: add((s) => s.cancelled),
    oldestReadyAgeMs: ages.length ? Math.max(...ages) : null,
    expiredLeases: add((s) => s.expiredLeases),
    lastMinute: window((s) => s.lastMinute),
    lastHour: window((s) => s.lastHour),
  };
}

function windowStats(completed: number, failed: number, died: number, timedOut: number, cancelled: number): WindowStats {
  return { completed, failed, died, timedOut, cancelled, failureRate: completed + failed === 0 ? null : failed / (completed + failed) };
}

function n(value: string | number | null): number {
  return value === null ? 0 : Number(value);
}
