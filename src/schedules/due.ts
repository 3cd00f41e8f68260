import type { EnqueueResult, JobSpec, SqlClient } from "../client.js";
import type { Transaction } from "../driver/types.js";
import { parseJson } from "../job.js";
import type { ScheduleQueries } from "../sql/schedules.js";
import { type ScheduleRow, toDate } from "./info.js";
import { type MissedPolicy, type OverlapPolicy, type ScheduleJobOptions, cronFor } from "./spec.js";
import { type SlotPlan, planSlots } from "./slots.js";

/** How errand's own enqueue is reached (so scheduled jobs get the kind's defaults and validation). */
export type EnqueueFn = (specs: readonly JobSpec[], options: { readonly db?: SqlClient }) => Promise<EnqueueResult[]>;

/** What a scheduler reports. */
export type SchedulerEvent =
  | { readonly type: "enqueued"; readonly schedule: string; readonly slot: Date; readonly jobId: string }
  | { readonly type: "skipped"; readonly schedule: string; readonly slot: Date; readonly reason: string }
  | { readonly type: "missed"; readonly schedule: string; readonly from: Date; readonly to: Date; readonly reason: string }
  | { readonly type: "error"; readonly schedule?: string; readonly error: unknown };

const runRetentionMs = 7 * 24 * 3600_000;

/**
 * Handles due schedules inside one transaction: locks up to `limit` of them (only
 * `names` when given, none in `exclude`) with SKIP LOCKED, plans their slots, inserts
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

  const plans = due.map((row): [ScheduleRow, SlotPlan] => {
    const status = row.last_job_id === null ? undefined : statuses.get(String(row.last_job_id));
    return [
      row,
      planSlots({
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

  const specs = plans.flatMap(([row, plan]) => {
    const options = (parseJson(row.job_options) as ScheduleJobOptions | null) ?? {};
    const payload = parseJson(row.payload);
    return plan.enqueue.map((slot) => ({ kind: row.kind, payload, ...options, runAt: slot, dedupeKey: `schedule:${row.name}:${slot.toISOString()}` }));
  });
  const results = specs.length > 0 ? await enqueue(specs, { db: tx }) : [];

  const events: SchedulerEvent[] = [];
  const runs: [string[], string[], (string | null)[], (string | null)[]] = [[], [], [], []];
  const advance: [string[], (string | null)[], (string | null)[], (string | null)[], (string | null)[], (string | null)[], (string | null)[]] = [[], [], [], [], [], [], []];
  let next = 0;
  for (const [row, plan] of plans) {
    const own: SchedulerEvent[] = [];
    let lastJob: string | null = null;
    for (const slot of plan.enqueue) {
      lastJob = results[next++]!.id;
      own.push({ type: "enqueued", schedule: row.name, slot, jobId: lastJob });
      pushAll(runs, [row.name, slot.toISOString(), lastJob, null]);
    }
    for (const { slot, reason } of plan.skipped) {
      own.push({ type: "skipped", schedule: row.name, slot, reason });
      pushAll(runs, [row.name, slot.toISOString(), null, reason]);
    }
    if (plan.missed) own.push({ type: "missed", schedule: row.name, ...plan.missed });
    own.sort((x, y) => eventTime(x) - eventTime(y));
    events.push(...own);
    const lastSkip = own.filter((e) => e.type === "skipped" || e.type === "missed").at(-1);
    pushAll(advance, [
      row.name,
      plan.next?.toISOString() ?? null,
      plan.lastHandled?.toISOString() ?? null,
      plan.enqueue.at(-1)?.toISOString() ?? null,
      lastJob,
      lastSkip ? new Date(eventTime(lastSkip)).toISOString() : null,
      lastSkip && "reason" in lastSkip ? lastSkip.reason : null,
    ]);
  }
  if (runs[0].length > 0) await tx.query(q.insertRuns.text, runs);
  await tx.query(q.advance.text, advance);
  await tx.query(q.pruneRuns.text, [advance[0], new Date(now.getTime() - runRetentionMs).toISOString()]);
  return { handled, events };
}

function pushAll<T extends unknown[][]>(columns: T, values: { [K in keyof T]: T[K][number] }): void {
  columns.forEach((column, i) => column.push(values[i]));
}

function eventTime(event: SchedulerEvent): number {
  return event.type === "missed" ? event.to.getTime() : event.type === "error" ? 0 : event.slot.getTime();
}
