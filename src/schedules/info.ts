import type { JobStatus } from "../job.js";
import { parseJson } from "../job.js";
import type { Json } from "../payload.js";
import type { MissedPolicy, OverlapPolicy, ScheduleJobOptions } from "./spec.js";

/** A schedule as `errand.schedules.list()` returns it. */
export interface ScheduleInfo {
  readonly name: string;
  readonly cron: string;
  readonly timezone: string;
  readonly kind: string;
  readonly payload: Json;
  readonly jobOptions: ScheduleJobOptions;
  readonly overlap: OverlapPolicy;
  readonly missed: MissedPolicy;
  readonly catchUpLimit: number;
  readonly graceMs: number;
  readonly paused: boolean;
  /** The next slot to be enqueued; null while paused or when the cron has no more. */
  readonly nextRun: Date | null;
  /** The latest slot handled: enqueued, skipped or dropped as missed. */
  readonly lastSlot: Date | null;
  /** The latest slot enqueued, its job, and that job's status now (null once the job was purged). */
  readonly lastEnqueued: { readonly slot: Date; readonly jobId: string; readonly status: JobStatus | null } | null;
  /** The latest slot whose job finished `done`, and when. */
  readonly lastSuccess: { readonly slot: Date; readonly at: Date | null; readonly jobId: string } | null;
  /** The latest slot not enqueued, and why (overlap, missed). */
  readonly lastSkipped: { readonly slot: Date; readonly reason: string } | null;
}

/** The row shape of the schedule queries. */
export interface ScheduleRow {
  name: string;
  cron: string;
  timezone: string;
  kind: string;
  payload: unknown;
  job_options: unknown;
  overlap: string;
  missed: string;
  catch_up_limit: number;
  grace_ms: number | string;
  paused: boolean;
  next_slot: Date | string | null;
  last_slot: Date | string | null;
  last_enqueued_slot: Date | string | null;
  last_job_id: string | number | null;
  last_success_slot: Date | string | null;
  last_success_at: Date | string | null;
  last_success_job_id: string | number | null;
  last_skipped_slot: Date | string | null;
  last_skip_reason: string | null;
  last_job_status?: JobStatus | null;
}

/** Drivers return timestamptz as a Date or a string. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

function maybeDate(value: Date | string | null): Date | null {
  return value === null ? null : toDate(value);
}

/** Converts a row to the public {@link ScheduleInfo}. */
export function toScheduleInfo(row: ScheduleRow): ScheduleInfo {
  return {
    name: row.name,
    cron: row.cron,
    timezone: row.timezone,
    kind: row.kind,
    payload: parseJson(row.payload) as Json,
    jobOptions: (parseJson(row.job_options) as ScheduleJobOptions | null) ?? {},
    overlap: row.overlap as OverlapPolicy,
    missed: row.missed as MissedPolicy,
    catchUpLimit: Number(row.catch_up_limit),
    graceMs: Number(row.grace_ms),
    paused: row.paused,
    nextRun: row.paused ? null : maybeDate(row.next_slot),
    lastSlot: maybeDate(row.last_slot),
    lastEnqueued:
      row.last_enqueued_slot === null || row.last_job_id === null
        ? null
        : { slot: toDate(row.last_enqueued_slot), jobId: String(row.last_job_id), status: row.last_job_status ?? null },
    lastSuccess:
      row.last_success_slot === null || row.last_success_job_id === null
        ? null
        : { slot: toDate(row.last_success_slot), at: maybeDate(row.last_success_at), jobId: String(row.last_success_job_id) },
    lastSkipped: row.last_skipped_slot === null ? null : { slot: toDate(row.last_skipped_slot), reason: row.last_skip_reason ?? "" },
  };
}
