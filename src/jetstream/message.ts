/**
 * A JetStream job as a message: the outbox row's body is `{kind, payload, maxAttempts,
 * retry?}`; the job's id is the message id the relay sets (`Nats-Msg-Id`, the outbox id),
 * so JetStream's duplicate window drops a copy a relay crash sends again.
 */
import { ValidationError } from "../errors.js";
import { type Json, serialisePayload } from "../payload.js";
import type { ResolvedKind } from "../options.js";
import { type RetryPolicy, decodeRetryPolicy, defaultMaxAttempts, defaultRetryPolicy } from "../retry-policy.js";
import { checkKeys, checkMaxAttempts, checkText } from "../validate.js";
import type { ClaimedJob } from "../worker/executor.js";
import { maxKindLength } from "../enqueue.js";

/** Options of one JetStream enqueue. */
export interface JetStreamEnqueueOptions {
  /** Your connection or open transaction: the job is written to the outbox with it, and commits or rolls back with it. */
  readonly db?: import("../driver/types.js").Queryable;
  /** Attempts before the job goes dead. Default: the kind's, else 8. */
  readonly maxAttempts?: number;
}

/** The body of a job message. */
interface Body {
  readonly kind: string;
  readonly payload: Json;
  readonly maxAttempts: number;
  readonly retry?: Partial<RetryPolicy> | null;
  /** The PostgreSQL job this one came from (a dead job retried), if any. */
  readonly jobId?: string;
}

/** The message body of one job, as JSON text; errors name `payload`, `kind` or `maxAttempts`. */
export function encodeJob(kind: unknown, payload: unknown, options: JetStreamEnqueueOptions, kinds: ReadonlyMap<string, ResolvedKind>, maxBytes: number, field = ""): Json {
  checkKeys(options, `${field}options`, ["db", "maxAttempts"]);
  const name = checkText(kind, `${field}kind`, { maxLength: maxKindLength });
  const maxAttempts = checkMaxAttempts(options.maxAttempts ?? kinds.get(name)?.maxAttempts ?? defaultMaxAttempts, `${field}maxAttempts`);
  // Checked here, by itself, so the error names the payload and its size limit is the queue's.
  const json = serialisePayload(payload ?? {}, maxBytes, `${field}payload`, "enqueue identifiers, not whole records");
  return { kind: name, payload: JSON.parse(json) as Json, maxAttempts };
}

/** A delivered message as the job its handler runs: `attempt` is JetStream's delivery count. */
export function decodeJob(id: string, data: string, attempt: number, timestamp: Date, kinds: ReadonlyMap<string, ResolvedKind>): ClaimedJob & { readonly policy: RetryPolicy } {
  const value: unknown = JSON.parse(data);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ValidationError("message", "must be a JSON object {kind, payload, maxAttempts}");
  const body = value as Body;
  if (typeof body.kind !== "string" || body.kind === "") throw new ValidationError("message.kind", "must be a job kind");
  const maxAttempts = checkMaxAttempts(body.maxAttempts, "message.maxAttempts");
  const policy = kinds.get(body.kind)?.retry ?? defaultRetryPolicy;
  const retry = body.retry === undefined || body.retry === null ? null : decodeRetryPolicy(JSON.stringify(body.retry), policy);
  return { id, kind: body.kind, payload: body.payload ?? null, attempt, maxAttempts, retry, runAt: timestamp, createdAt: timestamp, timeoutMs: null, policy };
}
