import type { Queryable, Transaction } from "../driver/types.js";
import { parseJson } from "../job.js";
import type { RetryPolicy } from "../retry-policy.js";
import type { ScheduleQueries } from "../sql/schedules.js";
import { type ScheduleRow, toDate } from "./info.js";
import { type MissedPolicy, type OverlapPolicy, type ScheduleJobOptions, cronFor } from "./spec.js";
import { type SlotDecision, decideSlots } from "./slots.js";

/** One job a slot enqueues: the schedule's kind, payload and job options, due at the slot. */
export interface SlotJob {
  readonly kind: string;
  readonly payload: unknown;
  readonly runAt: Date;
  /** `schedule:<name>:<slot>`, so a slot's job is inserted once whoever handles it. */
  readonly dedupeKey: string;
  readonly maxAttempts?: number;
  readonly priority?: number;
  readonly retry?: Partial<RetryPolicy>;
}

/**
 * errand's own enqueue (so scheduled jobs get the kind's defaults and validation), run
 * on `db`, the tick's transaction; results in input order. Given by the client, so
 * schedules depend on this shape rather than on the client.
 */
export type EnqueueFn = (jobs: readonly SlotJob[], options: { readonly db: Queryable }) => Promise<readonly { readonly id: string }[]>;

/** What a scheduler reports. */
export type SchedulerEvent =
  | { readonly type: "enqueued"; readonly schedule: string; readonly slot: Date; readonly jobId: string }
  | { readonly type: "skipped"; readonly schedule: string; readonly slot: Date; readonly reason: string }
  | { readonly type: "missed"; readonly schedule: string; readonly from: Date; readonly to: Date; readonly reason: string }
  | { readonly type: "error"; readonly schedule?: string; readonly error: unknown };

const runRetentionMs = 7 * 24 * 3600_000;

/**
 * Handles due schedules inside one transaction: locks up to `limit` of them (only
 * `names` when given, none in `exclude`) with SKIP LOCKED, decides their slots, inserts
 * every job in one statement, records the runs and advances the schedules. Returns the
 * schedules it handled and what happened (to report after commit).
 */
export async function handleDue(
  tx: Transaction,
  q: ScheduleQueries,
  enqueue: EnqueueFn,
  now: Date,
  limit: number,
  names: readonly string[] | null,
  exclude: readonly string[],
): Promise<{ handled: string[]; events: SchedulerEvent[] }> {
  const { rows } = await tx.query<ScheduleRow>(q.lockDue.text, [now.toISOString(), names, limit, exclude]);
  const handled = rows.map((row) => row.name);
  const due = rows.filter((row) => row.next_slot !== null);
  if (due.length === 0) return { handled, events: [] };

  const previous = due.filter((row) => row.overlap === "skip" && row.last_job_id !== null).map((row) => String(row.last_job_id));
  const statuses = new Map<string, string>();
  if (previous.length > 0) {
    const found = await tx.query<{ id: string | number; status: string }>(q.jobStatuses.text, [previous]);
    for (const row of found.rows) statuses.set(String(row.id), row.status);
  }

  const decisions = due.map((row): [ScheduleRow, SlotDecision] => {
    const status = row.last_job_id === null ? undefined : statuses.get(String(row.last_job_id));
    return [
      row,
      decideSlots({
        cron: cronFor(row.cron, row.timezone),
        next: toDate(row.next_slot!),
        now,
        graceMs: Number(row.grace_ms),
        missed: row.missed as MissedPolicy,
        catchUpLimit: Number(row.catch_up_limit),
        overlap: row.overlap as OverlapPolicy,
        inFlight: status === "ready" || status === "running",
      }),
    ];
  });

  const jobs = decisions.flatMap(([row, decision]): SlotJob[] => {
    const options = (parseJson(row.job_options) as ScheduleJobOptions | null) ?? {};
    const payload = parseJson(row.payload);
    return decision.enqueue.map((slot) => ({ kind: row.kind, payload, ...options, runAt: slot, dedupeKey: `schedule:${row.name}:${slot.toISOString()}` }));
  });
  const results = jobs.length > 0 ? await enqueue(jobs, { db: tx }) : [];

  const events: SchedulerEvent[] = [];
  const runs: [string[], string[], (string | null)[], (string | null)[]] = [[], [], [], []];
  const advance: [string[], (string | null)[], (string | null)[], (string | null)[], (string | null)[], (string | null)[], (string | null)[]] = [[], [], [], [], [], [], []];
  let next = 0;
  for (const [row, decision] of decisions) {
    const own: SchedulerEvent[] = [];
    let lastJob: string | null = null;
    for (const slot of decision.enqueue) {
      lastJob = results[next++]!.id;
      own.push({ type: "enqueued", schedule: row.name, slot, jobId: lastJob });
      pushAll(runs, [row.name, slot.toISOString(), lastJob, null]);
    }
    for (const { slot, reason } of decision.skipped) {
      own.push({ type: "skipped", schedule: row.name, slot, reason });
      pushAll(runs, [row.name, slot.toISOString(), null, reason]);
    }
    if (decision.missed) own.push({ type: "missed", schedule: row.name, ...decision.missed });
    own.sort((x, y) => eventTime(x) - eventTime(y));
    events.push(...own);
    const lastSkip = own.filter((e) => e.type === "skipped" || e.type === "missed").at(-1);
    pushAll(advance, [
      row.name,
      decision.next?.toISOString() ?? null,
      decision.lastHandled?.toISOString() ?? null,
      decision.enqueue.at(-1)?.toISOString() ?? null,
      lastJob,
      lastSkip ? new Date(eventTime(lastSkip)).toISOString() : null,
      lastSkip && "reason" in lastSkip ? lastSkip.reason : null,
    ]);
  }
  if (runs[0].length > 0) await tx.query(q.insertRuns.text, runs);
  await tx.query(q.advance.text, advance);
  await tx.query(q.trimRuns.text, [advance[0], new Date(now.getTime() - runRetentionMs).toISOString()]);
  return { handled, events };
}

function pushAll<T extends unknown[][]>(columns: T, values: { [K in keyof T]: T[K][number] }): void {
  columns.forEach((column, i) => column.push(values[i]));
}

function eventTime(event: SchedulerEvent): number {
  return event.type === "missed" ? event.to.getTime() : event.type === "error" ? 0 : event.slot.getTime();
}
