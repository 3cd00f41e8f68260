import { closest } from "./did-you-mean.js";

/**
 * Every code an {@link ErrandError} carries, so `switch (err.code)` is checked by the
 * compiler. Bad input and missing things have their own classes ({@link ValidationError},
 * {@link NotFoundError}); the rest are failures of the environment or of a run.
 */
export type ErrandErrorCode =
  /** Bad input; always a {@link ValidationError}, which names the field. */
  | "invalid_argument"
  /** A job, dead job or schedule named by the caller does not exist; a {@link NotFoundError}. */
  | "not_found"
  /** A handler gave up for good; a {@link PermanentError}: the job goes `dead` without retries. */
  | "permanent_failure"
  /** A job's kind has no handler; an {@link UnknownKindError}. */
  | "unknown_kind"
  /** The PostgreSQL server could not be reached when opening. */
  | "connect_failed"
  /** The embedded database's folder could not be opened. */
  | "embedded_open_failed"
  /** Another live process holds the embedded database's lock file. */
  | "embedded_locked"
  /** A job with the same dedupe key was neither inserted nor found (deleted concurrently). */
  | "dedupe_race"
  /** A worker was started twice, or `runOnce()` was called on a started one. */
  | "worker_state"
  /** The job's lease was taken away (rescued or re-claimed); its handler's signal aborts with this. */
  | "lease_lost"
  /** The job's lease could not be extended before it ran out; its handler's signal aborts with this. */
  | "lease_expired"
  /** The worker is stopping past its deadline; the handler's signal aborts with this and the job runs again. */
  | "shutdown"
  /** The handler ran past its maximum run time (`timeoutMs`); its signal aborts with this and the attempt fails. */
  | "timeout"
  /** The job was cancelled while it ran; its signal aborts with this and the job ends `cancelled`. */
  | "cancelled"
  /** A job named to cancel has already finished (done, dead or cancelled); nothing was changed. */
  | "job_finished"
  /** An alert notifier (webhook, Telegram) did not deliver. */
  | "notify_failed"
  /** `drain()` (errand/testing) ran its `maxJobs` and jobs are still due. */
  | "drain_limit"
  /** The migration list shipped in the build is empty or out of order (a broken bundle). */
  | "invalid_migrations"
  /** An isolated handler's thread or process exited before the handler finished. */
  | "isolate_exited"
  /** What was asked cannot work where it was asked: `ctx.complete(tx)` in an isolated handler. */
  | "unsupported"
  /** A stored job row cannot be run as it is (e.g. its `retry` column is not a policy); that job alone goes dead. */
  | "invalid_job"
  /** A job's outcome could not be written even alone; it was moved to dead, or runs again after its lease. */
  | "outcome_not_written"
  /** `waitFor` reached its `timeoutMs` before the job finished (the job itself is not affected). */
  | "wait_timeout"
  /** `waitFor` was still waiting when the errand was closed. */
  | "closed"
  /** The relay could not reach its broker when starting, or the broker lacks the stream or exchange it needs. */
  | "broker_unreachable"
  /** An optional feature's package is not installed; the message names it. */
  | "missing_dependency"
  /** A migration could not take a lock it needs for a moment: another transaction kept holding the table. */
  | "migration_lock_timeout";

/**
 * Every error errand raises on purpose is an {@link ErrandError} with a stable `code`,
 * so callers can branch on `err.code` instead of parsing messages.
 */
export class ErrandError extends Error {
  /** A stable, machine-readable code such as `"invalid_argument"`. */
  readonly code: ErrandErrorCode;

  constructor(code: ErrandErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ErrandError";
    this.code = code;
  }
}

/**
 * Bad input: the message names the field (`payload.user.createdAt`, `maxAttempts`, …).
 * Nothing was written when this is thrown.
 */
export class ValidationError extends ErrandError {
  /** The argument or field at fault, e.g. `"payload"` or `"delay"`. */
  readonly field: string;

  constructor(field: string, message: string) {
    super("invalid_argument", `${field}: ${message}`);
    this.name = "ValidationError";
    this.field = field;
  }
}

/**
 * What the caller named does not exist: a dead job to retry or discard, a schedule to
 * pause, resume or remove. The message says what was looked for (and, for a schedule,
 * the nearest name); nothing was changed.
 */
export class NotFoundError extends ErrandError {
  constructor(message: string) {
    super("not_found", message);
    this.name = "NotFoundError";
  }
}

/**
 * Throw this from a handler (or wrap an error with {@link permanent}) when retrying
 * cannot help, e.g. a validation failure: the job goes to `dead` at once.
 *
 * @example
 * ```ts
 * if (!payload.email.includes("@")) throw new PermanentError("not an email address");
 * ```
 */
export class PermanentError extends ErrandError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("permanent_failure", message, options);
    this.name = "PermanentError";
  }
}

/** Marks `error` as permanent: the job that threw it is not retried. */
export function permanent(error: unknown): PermanentError {
  if (error instanceof PermanentError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const wrapped = new PermanentError(message, { cause: error });
  if (error instanceof Error && error.stack) wrapped.stack = error.stack;
  return wrapped;
}

/** A job names a kind that no handler is registered for. */
export class UnknownKindError extends ErrandError {
  constructor(kind: string, known: readonly string[]) {
    const hint = closest(kind, known);
    const list = known.length ? `known kinds: ${known.join(", ")}` : "no handlers are registered";
    super(
      "unknown_kind",
      `unknown kind '${kind}'${hint ? ` — did you mean '${hint}'?` : ""} (${list})`,
    );
    this.name = "UnknownKindError";
  }
}
