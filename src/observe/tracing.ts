import { type Attributes, INVALID_TRACEID, type Span, SpanKind, SpanStatusCode, context, trace } from "@opentelemetry/api";

/**
 * OpenTelemetry spans through `@opentelemetry/api` only: with no SDK registered these
 * are no-ops; register one (NodeSDK, a TracerProvider) and errand's spans appear in the
 * user's traces, with handlers' own spans as children of the run span.
 */
const tracer = () => trace.getTracer("errand");

/** Runs an enqueue inside a `send <kind>` producer span (`send` alone for mixed kinds). */
export function traceEnqueue<T>(specs: readonly { readonly kind: string }[], fn: () => T | PromiseLike<T>): Promise<Awaited<T>> {
  const list: readonly { readonly kind?: unknown }[] = Array.isArray(specs) ? specs : [];
  const kinds = [...new Set(list.map((spec): unknown => spec?.kind))];
  const kind = kinds.length === 1 && typeof kinds[0] === "string" ? kinds[0] : undefined;
  const attributes: Attributes = { "messaging.system": "errand", "messaging.operation.type": "send", "messaging.batch.message_count": list.length };
  if (kind) attributes["messaging.destination.name"] = kind;
  return inSpan(kind ? `send ${kind}` : "send", SpanKind.PRODUCER, attributes, fn);
}

/**
 * Runs a job's handler inside a `process <kind>` consumer span; a throw marks the span as
 * an error. With no SDK registered the span is a no-op without a trace id: there is
 * nothing to hand to the handler's own spans, so the handler is called directly (no
 * context, no extra promise per job). A sampled-out span still has a trace id and is
 * passed on, as its children need it.
 */
export function traceRun<T>(job: { readonly id: string; readonly kind: string; readonly attempt: number; readonly maxAttempts: number }, fn: () => T | PromiseLike<T>): T | PromiseLike<T> {
  const span = tracer().startSpan(`process ${job.kind}`, {
    kind: SpanKind.CONSUMER,
    attributes: {
      "messaging.system": "errand",
      "messaging.operation.type": "process",
      "messaging.destination.name": job.kind,
      "messaging.message.id": job.id,
      "errand.job.attempt": job.attempt,
      "errand.job.max_attempts": job.maxAttempts,
    },
  });
  if (!span.isRecording() && span.spanContext().traceId === INVALID_TRACEID) return fn();
  return within(span, fn);
}

function inSpan<T>(name: string, kind: SpanKind, attributes: Attributes, fn: () => T | PromiseLike<T>): Promise<Awaited<T>> {
  return within(tracer().startSpan(name, { kind, attributes }), fn);
}

async function within<T>(span: Span, fn: () => T | PromiseLike<T>): Promise<Awaited<T>> {
  try {
    const result = await context.with(trace.setSpan(context.active(), span), fn);
    span.setStatus({ code: SpanStatusCode.OK });
    return result;
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    span.end();
  }
}
