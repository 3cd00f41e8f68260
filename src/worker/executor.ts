import { PermanentError, UnknownKindError } from "../errors.js";
import { isSnooze } from "../outcomes.js";
import { type RetryPolicy, retryDelay } from "../retry-policy.js";
import { traceRun } from "../observe/tracing.js";
import type { Handler, Handlers, JobContext } from "./handlers.js";

/** A claimed job as the worker holds it. */
export interface ClaimedJob {
  readonly id: string;
  readonly kind: string;
  readonly payload: unknown;
  /** The attempt number this claim is (attempts after the claim). */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The job's own retry policy, if it was enqueued with one. */
  readonly retry: RetryPolicy | null;
  readonly runAt: Date;
  readonly createdAt: Date;
}

/** What running a handler came to, to be written by the completer. */
export type Outcome =
  | { readonly type: "done" }
  | { readonly type: "failed"; readonly error: string; readonly permanent: boolean; readonly delayMs: number }
  | { readonly type: "snoozed"; readonly delayMs: number };

/** Every success is the same outcome: one object, not one per job. */
const done: Outcome = Object.freeze({ type: "done" });

/** Longest error text kept in `last_error` (message and stack). */
export const maxErrorLength = 4000;

/**
 * Runs one job's handler and turns whatever happens into an {@link Outcome}. Never throws.
 */
export async function execute(
  job: ClaimedJob,
  handlers: Handlers,
  abort: { readonly signal: AbortSignal },
  policy: RetryPolicy,
  random: () => number = Math.random,
): Promise<Outcome> {
  const handler = Object.hasOwn(handlers, job.kind) ? (handlers[job.kind] as Handler<unknown>) : undefined;
  try {
    if (!handler) throw new UnknownKindError(job.kind, Object.keys(handlers));
    const context: JobContext = {
      id: job.id,
      kind: job.kind,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      // Read on first use: most handlers never look at it, and an AbortSignal per job
      // was a tenth of a no-op job's cost.
      get signal() {
        return abort.signal;
      },
      idempotencyKey: `errand-job-${job.id}`,
      createdAt: job.createdAt,
    };
    const result = await traceRun(job, () => handler(job.payload, context));
    if (isSnooze(result)) return { type: "snoozed", delayMs: result.delayMs };
    return done;
  } catch (error) {
    return {
      type: "failed",
      error: describeError(error),
      permanent: error instanceof PermanentError,
      delayMs: retryDelay(job.attempt, job.retry ?? policy, random),
    };
  }
}

/** Message and stack, truncated to {@link maxErrorLength}. */
export function describeError(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    const head = `${error.name}: ${error.message}`;
    text = error.stack?.includes(error.message) ? error.stack : `${head}\n${error.stack ?? ""}`;
    if (error.cause !== undefined && !(error instanceof PermanentError && error.stack === (error.cause as Error)?.stack)) {
      text += `\nCaused by: ${error.cause instanceof Error ? (error.cause.stack ?? error.cause.message) : safeString(error.cause)}`;
    }
  } else {
    text = `thrown value: ${safeString(error)}`;
  }
  return text.length > maxErrorLength ? `${text.slice(0, maxErrorLength - 14)}… [truncated]` : text;
}

function safeString(value: unknown): string {
  try {
    return typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}
