// What `errand plan` computes: the waits a retry policy gives (and whether the last
// attempt comes after an outage), and the workers a rate × duration needs.

import { ValidationError } from "./errors.js";
import { type RetryPolicy, resolveRetryPolicy } from "./retry-policy.js";
import { checkMaxAttempts } from "./validate.js";
import { grouped } from "./human-format.js";

/** One row of a retry schedule: the wait after failure `failure`, before and with jitter. */
export interface RetryStep {
  readonly failure: number;
  /** The wait before jitter, which is also the longest. */
  readonly waitMs: number;
  /** The wait if jitter rolls its minimum. */
  readonly minWaitMs: number;
  /** When the next attempt runs, counted from the first failure, before jitter. */
  readonly cumulativeMs: number;
  /** The same if jitter rolls its minimum every time. */
  readonly minCumulativeMs: number;
}

/**
 * The waits a job goes through under `policy` until its last attempt: one row per failure
 * that is followed by a retry (`maxAttempts − 1` rows).
 *
 * @example
 * ```ts
 * retrySchedule(defaultRetryPolicy, 8).at(-1); // { failure: 7, waitMs: 1_920_000, cumulativeMs: 3_810_000, … }
 * ```
 */
export function retrySchedule(policy: RetryPolicy, maxAttempts: number): RetryStep[] {
  const rows: RetryStep[] = [];
  let cumulative = 0;
  let minCumulative = 0;
  for (let failure = 1; failure < maxAttempts; failure++) {
    const wait = Math.min(policy.maxDelayMs, policy.baseDelayMs * policy.factor ** (failure - 1));
    const minWait = wait * (1 - policy.jitter);
    cumulative += wait;
    minCumulative += minWait;
    rows.push({ failure, waitMs: wait, minWaitMs: minWait, cumulativeMs: cumulative, minCumulativeMs: minCumulative });
  }
  return rows;
}

/** Options of {@link retryPlanText}. */
export interface RetryPlanOptions {
  readonly policy: Partial<RetryPolicy>;
  readonly maxAttempts: number;
  /** An outage to compare the last attempt with, e.g. 20 minutes of a mail provider being down. */
  readonly outageMs?: number;
}

/**
 * A policy's retry table (tab-separated columns: failure, wait, cumulative wait), the
 * same with jitter's range, and when the last attempt runs.
 */
export function retryPlanText(options: RetryPlanOptions): string {
  const policy = resolveRetryPolicy(options.policy, "retry");
  const maxAttempts = checkMaxAttempts(options.maxAttempts, "maxAttempts");
  const rows = retrySchedule(policy, maxAttempts);
  const lowest = 1 - policy.jitter;
  const out = [
    `Retry policy: wait min(${seconds(policy.maxDelayMs)}, ${seconds(policy.baseDelayMs)} × ${grouped(policy.factor)}^(n−1)) after failure n, ` +
      `× ${grouped(lowest)}–1.0 jitter; max_attempts = ${maxAttempts}`,
    "",
  ];
  if (rows.length === 0) {
    out.push(`max_attempts = 1: no retries; a job is dead after its first failure.`);
    return out.join("\n") + "\n";
  }
  out.push("Failure #\tWait\tCumulative");
  for (const row of rows) out.push(`${row.failure}\t${seconds(row.waitMs)}\t${cumulative(row.cumulativeMs)}`);
  if (policy.jitter > 0) {
    out.push("", `With jitter (each wait × ${grouped(lowest)}–1.0):`, "Failure #\tWait min\tWait max\tCumulative min\tCumulative max");
    for (const row of rows) {
      out.push(`${row.failure}\t${seconds(row.minWaitMs)}\t${seconds(row.waitMs)}\t${cumulative(row.minCumulativeMs)}\t${cumulative(row.cumulativeMs)}`);
    }
  }
  const last = rows.at(-1)!;
  let sentence = `max_attempts = ${maxAttempts}: attempt ${maxAttempts} runs at ${grouped(round(last.cumulativeMs / 1000))} seconds${approxMinutes(last.cumulativeMs)}.`;
  if (policy.jitter > 0) sentence += ` Even if jitter rolls the minimum (×${grouped(lowest)}) every time, that is${approxMinutes(last.minCumulativeMs, true)}.`;
  out.push("", sentence);
  if (options.outageMs !== undefined) out.push(outageVerdict(options.outageMs, last, maxAttempts));
  return out.join("\n") + "\n";
}

function outageVerdict(outageMs: number, last: RetryStep, maxAttempts: number): string {
  const outage = `a ${grouped(round(outageMs / 60_000))}-minute outage`;
  if (last.minCumulativeMs > outageMs) return `The last attempt comes safely past ${outage}, even at minimum jitter.`;
  if (last.cumulativeMs > outageMs) return `The last attempt comes past ${outage} only if jitter rolls high: some jobs go dead. Raise max_attempts.`;
  return `Attempt ${maxAttempts} runs while ${outage} is still on, and every job goes dead. Raise max_attempts.`;
}

/** What `errand plan --rate … --duration …` computes. */
export interface CapacityOptions {
  readonly jobsPerHour: number;
  readonly durationMs: number;
  /** Jobs arriving at once. */
  readonly burst?: number;
  /** Workers draining the burst. Default: the minimum needed for the rate. */
  readonly workers?: number;
}

/** Workers needed for a rate (rate × duration ÷ 1 h, rounded up), and how long a burst takes to drain. */
export function capacity(options: CapacityOptions): { readonly workers: number; readonly minWorkers: number; readonly burstClearMs: number | null } {
  positive(options.jobsPerHour, "rate");
  positive(options.durationMs, "duration");
  const workers = (options.jobsPerHour * options.durationMs) / 3_600_000;
  const minWorkers = Math.max(1, Math.ceil(round(workers, 6)));
  if (options.burst === undefined) return { workers, minWorkers, burstClearMs: null };
  positive(options.burst, "burst");
  const drainers = options.workers ?? minWorkers;
  positive(drainers, "workers");
  return { workers, minWorkers, burstClearMs: (options.burst * options.durationMs) / drainers };
}

/** The capacity arithmetic for a rate × duration (and a burst), written out as sentences. */
export function capacityPlanText(options: CapacityOptions): string {
  const result = capacity(options);
  const rate = grouped(options.jobsPerHour);
  const duration = grouped(round(options.durationMs / 1000, 3));
  const out = [
    `${rate} × ${duration} = ${grouped(round((options.jobsPerHour * options.durationMs) / 1000))} seconds of work per hour ÷ 3,600 = ` +
      `${grouped(round(result.workers, 2))} workers, so at least ${result.minWorkers}.`,
  ];
  if (result.burstClearMs !== null) {
    const workers = options.workers ?? result.minWorkers;
    const clear = result.burstClearMs / 1000;
    const minutes = clear >= 60 ? ` = ${grouped(round(clear / 60, 2))} minutes` : "";
    out.push(
      `If ${grouped(options.burst!)} jobs arrive at once and ${workers} workers run, the queue clears in ` +
        `${grouped(options.burst!)} × ${duration} ÷ ${workers} = ${grouped(round(clear, 2))} seconds${minutes}. ` +
        `Check that the API's rate limit allows ${workers} concurrent calls.`,
    );
  }
  return out.join("\n") + "\n";
}

/** Parses `600/h`, `10/min`, `2/s` (or a bare number per hour) into jobs per hour. */
export function parseRate(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(h|hour|m|min|minute|s|sec|second))?\s*$/.exec(text);
  if (!match) throw new ValidationError("rate", `must look like 600/h, 10/min or 2/s (got ${JSON.stringify(text)})`);
  const per = match[2] ?? "h";
  const factor = per.startsWith("h") ? 1 : per.startsWith("m") ? 60 : 3600;
  return Number(match[1]) * factor;
}

function positive(value: number, field: string): void {
  if (!Number.isFinite(value) || value <= 0) throw new ValidationError(field, `must be a positive number (got ${value})`);
}

function seconds(ms: number): string {
  return `${grouped(round(ms / 1000, 2))} s`;
}

/** The cumulative column: seconds under a minute, then minutes, then hours. */
function cumulative(ms: number): string {
  if (ms < 60_000) return seconds(ms);
  if (ms < 180 * 60_000) return `${grouped(round(ms / 60_000, 2))} min`;
  return `${grouped(round(ms / 3_600_000, 2))} h`;
}

function approxMinutes(ms: number, always = false): string {
  if (ms < 60_000 && !always) return "";
  return ` ≈ ${grouped(round(ms / 60_000, 2))} minutes`;
}

function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
