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
}

/**
 * Runs one job. Resolve to succeed; throw to fail (retried with backoff; throw a
 * `PermanentError` to skip retries); return `snooze(ms)` to come back later.
 * Handlers must be idempotent: delivery is at least once.
 */
export type Handler<Payload = Json> = (payload: Payload, context: JobContext) => unknown;

/**
 * Handlers by job kind. Each may declare its own payload type.
 *
 * @example
 * ```ts
 * const handlers = {
 *   send_receipt: async ({ orderId }: { orderId: number }, ctx) => mailer.send(orderId, ctx.idempotencyKey),
 * } satisfies Handlers;
 * ```
 */
export type Handlers = Readonly<Record<string, Handler<never>>>;
