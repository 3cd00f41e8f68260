import type { Kind, UntypedJobs } from "../jobs.js";
import type { Queryable } from "../driver/types.js";
import type { Json } from "../payload.js";

/** What a handler gets besides the payload. */
export interface JobContext {
  /** The job's id (a string: PostgreSQL bigint). */
  readonly id: string;
  readonly kind: string;
  /** This attempt's number, starting at 1. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /**
   * Fires when the job's lease was lost (another worker may run it) or when shutdown's
   * deadline arrived. Pass it to `fetch` and other cancellable calls.
   */
  readonly signal: AbortSignal;
  /**
   * Stable across retries of this job: pass it as the idempotency key of an external
   * API (Stripe's `Idempotency-Key`) so a rerun does not charge twice.
   */
  readonly idempotencyKey: string;
  /** When the job was enqueued. */
  readonly createdAt: Date;
  /**
   * The state an earlier attempt of this job saved with {@link checkpoint} (the last one
   * it saved), or undefined: start from there instead of from the beginning.
   */
  readonly lastCheckpoint: Json | undefined;
  /**
   * Saves `state` (plain JSON, at most 64 KiB) as the job's checkpoint at once, for the
   * next attempt should this one crash or fail: it gets it as {@link lastCheckpoint}.
   * Rejects with a ValidationError naming the value when `state` is not JSON or too large
   * (nothing is saved), and with an ErrandError `lease_lost` when the job is no longer
   * this worker's (stop: another worker may be running it).
   */
  checkpoint(state: Json): Promise<void>;
  /**
   * Marks the job done inside your own transaction `tx` (a `pg` client in BEGIN, a PGlite
   * transaction, or a postgres.js, Kysely or Drizzle one through the adapters), so its
   * writes and its completion commit together: exactly once, even if the worker dies right
   * after the commit. Call it last, just before COMMIT (it locks the stats counters until
   * then). Rejects with an ErrandError `lease_lost` when the job is no longer this worker's:
   * let that roll the transaction back. Whatever the handler does after it, the job stays
   * done once `tx` commits; if `tx` rolls back, the handler's outcome counts as usual.
   * In an `isolated()` handler it always rejects with an ErrandError `unsupported`: a
   * transaction cannot cross to the worker's process (return from the handler instead).
   */
  complete(tx: Queryable): Promise<void>;
  /**
   * Reports how far the job has come: a number or small plain JSON (at most 4 KiB), shown
   * by `getJob`, the dashboard and `waitFor`'s `onProgress`. Returns at once: the worker
   * writes the latest value in the background, at most once per job per
   * `progressIntervalMs` (500 ms), and the last one with the job's completion. Throws a
   * `ValidationError` naming `progress` for a value that is not JSON or too big.
   */
  progress(value: Json): void;
}

/**
 * Runs one job. Resolve to succeed; throw to fail (retried with backoff; throw a
 * `PermanentError` to skip retries); return `snooze(ms)` to come back later.
 * Handlers must be idempotent: delivery is at least once.
 */
export type Handler<Payload = Json> = (payload: Payload, context: JobContext) => unknown;

/**
 * A handler of an untyped kind. Its payload is any JSON value (never `undefined`): to use
 * it, annotate it (`({ orderId }: { orderId: number }) => …`) or check it. A method type,
 * so that an annotated payload type fits as it did before job maps, as the payload is
 * only checked at run time; unannotated, a property of it is a compile error, not `any`.
 */
type UntypedHandler = { handle(payload: NonNullable<unknown> | null, context: JobContext): unknown }["handle"];

/** The handler of a kind whose payload type is `Payload`. */
export type HandlerFor<Payload> = unknown extends Payload ? UntypedHandler : Handler<Payload>;

/**
 * Handlers by job kind, typed by the job map: each handler's payload is its kind's, and a
 * kind that is not in the map is a compile error. A worker may handle some kinds only.
 * Without a map (`Handlers`), any kind, each handler declaring its own payload type.
 *
 * @example
 * ```ts
 * const handlers: Handlers<JobsOf<typeof jobs>> = {
 *   send_welcome_email: async ({ userId }, ctx) => mailer.welcome(userId, ctx.idempotencyKey),
 * };
 * ```
 */
export type Handlers<Jobs = UntypedJobs> = string extends Kind<Jobs>
  ? { readonly [kind: string]: HandlerFor<Jobs[string]> }
  : { readonly [K in Kind<Jobs>]?: HandlerFor<Jobs[K]> };
