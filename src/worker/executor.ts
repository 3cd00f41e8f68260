import { maxProgressBytes } from "../defaults.js";
import { PermanentError, UnknownKindError } from "../errors.js";
import { serialisePayload } from "../payload.js";
import { isSnooze } from "../outcomes.js";
import { type RetryPolicy, retryDelay } from "../retry-policy.js";
import { traceRun } from "../observe/tracing.js";
import type { Queryable } from "../driver/types.js";
import type { Json } from "../payload.js";
import type { Handler, Handlers, JobContext } from "./handlers.js";

/** A claimed job as the worker holds it. */
export interface ClaimedJob {
  readonly id: string;
  readonly kind: string;
  readonly payload: unknown;
  /** The attempt its handler runs as (attempts once it started; see the claim statement). */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The job's own retry policy (completed from its kind's), if it was enqueued with one. */
  readonly retry: RetryPolicy | null;
  readonly runAt: Date;
  readonly createdAt: Date;
  /** The job's own maximum run time in ms, if it was enqueued with one (else its kind's applies). */
  readonly timeoutMs?: number | null;
  /** The state an earlier attempt saved with `ctx.checkpoint()`, if any. */
  readonly lastCheckpoint?: Json | undefined;
  /** The id of the lease record its claim wrote (migration 021), which the heartbeat replaces. */
  readonly lease?: string | undefined;
}

/** What a handler's context writes to the database on its own (see src/worker/run-writes.ts). */
export interface RunWrites {
  /** Saves `state` as the job's checkpoint; rejects with a ValidationError or when the lease is lost. */
  checkpoint(job: ClaimedJob, state: unknown): Promise<void>;
  /** Marks the job done within the caller's transaction `tx`; rejects when the lease is lost. */
  complete(job: ClaimedJob, tx: Queryable): Promise<void>;
}

/** What running a handler came to, to be written by the completer. */
export type Outcome =
  /** `result`: what the handler returned, as checked JSON text; `progress`: its last report not yet written. */
  | { readonly type: "done"; readonly result?: string; readonly progress?: string }
  | { readonly type: "failed"; readonly error: string; readonly permanent: boolean; readonly delayMs: number }
  | { readonly type: "snoozed"; readonly delayMs: number };

/** Every success is the same outcome: one object, not one per job. */
const done: Outcome = Object.freeze({ type: "done" });

/** What the executor does with a handler's result and progress reports. */
export interface ResultHandling {
  /** Largest result accepted, in bytes of JSON. */
  readonly maxResultBytes: number;
  /** Receives each progress report, checked and serialised. */
  readonly progress: (job: ClaimedJob, json: string) => void;
}

/** For callers that keep no progress (tests of the executor alone). */
const ignoreProgress: ResultHandling = { maxResultBytes: Infinity, progress: () => {} };

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
  writes: RunWrites,
  random: () => number = Math.random,
  results: ResultHandling = ignoreProgress,
): Promise<Outcome> {
  const handler = Object.hasOwn(handlers, job.kind) ? (handlers[job.kind] as Handler<unknown>) : undefined;
  try {
    if (!handler) throw new UnknownKindError(job.kind, Object.keys(handlers));
    const context = new RunContext(job, abort, writes, results);
    const result = await traceRun(job, () => handler(job.payload, context));
    if (isSnooze(result)) return { type: "snoozed", delayMs: result.delayMs };
    // Nothing returned: the shared outcome, and the completion statement without values.
    if (result === undefined || result === null) return done;
    // A result that is not JSON or too big fails the attempt here, naming `result`: nothing of it is written.
    return { type: "done", result: serialisePayload(result, results.maxResultBytes, "result", "return a summary or a reference to the output, not the output") };
  } catch (error) {
    return failure(error, job, policy, random);
  }
}

/**
 * A handler's context. One object per job whose functions are made on first use: most
 * handlers call none of them, and a no-op job's cost is mostly such per-job allocations.
 * Each function is made once per job, so `const { checkpoint } = ctx` works as before.
 */
class RunContext implements JobContext {
  readonly id: string;
  readonly kind: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly createdAt: Date;
  readonly lastCheckpoint: Json | undefined;
  readonly #job: ClaimedJob;
  readonly #abort: { readonly signal: AbortSignal };
  readonly #writes: RunWrites;
  readonly #results: ResultHandling;
  #checkpoint: JobContext["checkpoint"] | undefined;
  #complete: JobContext["complete"] | undefined;
  #progress: JobContext["progress"] | undefined;

  constructor(job: ClaimedJob, abort: { readonly signal: AbortSignal }, writes: RunWrites, results: ResultHandling) {
    this.id = job.id;
    this.kind = job.kind;
    this.attempt = job.attempt;
    this.maxAttempts = job.maxAttempts;
    this.createdAt = job.createdAt;
    this.lastCheckpoint = job.lastCheckpoint;
    this.#job = job;
    this.#abort = abort;
    this.#writes = writes;
    this.#results = results;
  }

  /** Read on first use: an AbortSignal per job was a tenth of a no-op job's cost. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get idempotencyKey(): string {
    return `errand-job-${this.id}`;
  }

  get checkpoint(): JobContext["checkpoint"] {
    return (this.#checkpoint ??= (state) => this.#writes.checkpoint(this.#job, state));
  }

  get complete(): JobContext["complete"] {
    return (this.#complete ??= (tx) => this.#writes.complete(this.#job, tx));
  }

  get progress(): JobContext["progress"] {
    return (this.#progress ??= (value) => {
      this.#results.progress(this.#job, serialisePayload(value, maxProgressBytes, "progress", "report a figure or a small object, not data"));
    });
  }
}

/** The outcome of a thrown `error`. Never throws, whatever was thrown. */
function failure(error: unknown, job: ClaimedJob, policy: RetryPolicy, random: () => number): Outcome {
  return { type: "failed", error: describeError(error), permanent: isInstance(error, PermanentError), delayMs: retryDelay(job.attempt, job.retry ?? policy, random) };
}

/**
 * Message and stack, truncated to {@link maxErrorLength}. Never throws: a thrown value
 * may be anything — a Symbol message, getters or `toString`/`toJSON` that throw, a
 * (revoked) Proxy — and describing it must not take the worker down.
 */
export function describeError(error: unknown): string {
  let text: string;
  try {
    text = describe(error);
  } catch {
    text = `thrown value: ${safeString(error)}`;
  }
  return text.length > maxErrorLength ? `${text.slice(0, maxErrorLength - 14)}… [truncated]` : text;
}

function describe(error: unknown): string {
  if (!isInstance(error, Error)) return `thrown value: ${safeString(error)}`;
  const name = safeString(read(error, "name"));
  const message = safeString(read(error, "message"));
  const stack = read(error, "stack");
  let text = typeof stack !== "string" ? `${name}: ${message}` : stack.includes(message) ? stack : `${name}: ${message}\n${stack}`;
  const cause = read(error, "cause");
  if (cause !== undefined && !(isInstance(error, PermanentError) && stack === read(cause, "stack"))) {
    const causeIsError = isInstance(cause, Error);
    const causeStack = causeIsError ? read(cause, "stack") : undefined;
    text += `\nCaused by: ${typeof causeStack === "string" ? causeStack : causeIsError ? safeString(read(cause, "message")) : safeString(cause)}`;
  }
  return text;
}

/** `value instanceof type`, false when asking throws (a Proxy's getPrototypeOf trap, a revoked Proxy). */
function isInstance(value: unknown, type: abstract new (...args: never[]) => unknown): boolean {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** `value[key]`, or undefined when reading it throws (a getter, a Proxy trap). */
function read(value: unknown, key: string): unknown {
  try {
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  } catch {
    return undefined;
  }
}

/** A string for any value; falls back step by step when JSON.stringify or toString throws. */
function safeString(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "symbol") return value.toString();
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    try {
      return String(value);
    } catch {
      return `[${typeof value} that cannot be shown]`;
    }
  }
}
