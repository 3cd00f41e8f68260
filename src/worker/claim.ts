import { ErrandError } from "../errors.js";
import { type RetryPolicy, decodeRetryPolicy } from "../retry-policy.js";
import type { Json } from "../payload.js";
import { type ClaimedJob, describeError } from "./executor.js";

/** A row of the claim statement (see `claim` in src/sql/jobs.ts). */
export interface ClaimRow {
  id: string | number;
  kind: string;
  payload: unknown;
  attempts: number;
  /** False for a reserved row: its attempt is spent when its handler starts. */
  started: boolean;
  max_attempts: number;
  /** jsonb as text: decoded per job, so one odd value cannot fail the batch. */
  retry: string | null;
  /** The job's own maximum run time in ms; null (almost always): its kind's. */
  timeout_ms: number | null;
  /** With run_at_ms and id, the job's place in claim order (see claim-floor.ts). */
  priority: number;
  /** Epoch milliseconds (float8): cheaper to read than a timestamptz's text. */
  run_at_ms: number;
  created_at_ms: number;
  /** jsonb as text (a checkpoint may be a JSON string), null for a job that never saved one. */
  checkpoint: string | null;
}

/** One claimed row as a job; `error` says why it cannot run (it fails alone, the batch runs). */
export interface DecodedClaim {
  readonly job: ClaimedJob;
  readonly error: Error | undefined;
}

/**
 * Turns a claimed row into the job its handler sees. Never throws: a `retry` column that
 * is not a retry policy comes back as `error`, and a partial one is completed from
 * `policyFor(kind)`.
 */
export function decodeClaimRow(row: ClaimRow, policyFor: (kind: string) => RetryPolicy): DecodedClaim {
  const id = String(row.id);
  let retry: RetryPolicy | null = null;
  let error: Error | undefined;
  if (row.retry !== null) {
    try {
      retry = decodeRetryPolicy(row.retry, policyFor(row.kind));
    } catch (cause) {
      error = new ErrandError("invalid_job", `job ${id} cannot run: its retry column is not a retry policy (${describeError(cause)})`, { cause });
    }
  }
  const job: ClaimedJob = {
    id,
    kind: row.kind,
    payload: row.payload,
    attempt: row.started ? Number(row.attempts) : Number(row.attempts) + 1,
    maxAttempts: Number(row.max_attempts),
    retry,
    timeoutMs: row.timeout_ms === null || row.timeout_ms === undefined ? null : Number(row.timeout_ms),
    runAt: new Date(Number(row.run_at_ms)),
    createdAt: new Date(Number(row.created_at_ms)),
    // jsonb's text is always JSON: parsing it cannot fail.
    lastCheckpoint: row.checkpoint === null ? undefined : (JSON.parse(row.checkpoint) as Json),
  };
  return { job, error };
}
