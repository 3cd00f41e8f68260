import { AsyncLocalStorage } from "node:async_hooks";
import { type Attributes, type Context, type ContextManager, ROOT_CONTEXT, type Span, type SpanOptions, type SpanStatus, type Tracer, type TracerProvider, context, trace } from "@opentelemetry/api";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type TestErrand, testErrand } from "../support/db.js";

/** What a recording span saw. */
interface Recorded {
  name: string;
  kind: number | undefined;
  attributes: Attributes;
  status?: SpanStatus;
  exceptions: unknown[];
  ended: boolean;
  parent: string | undefined;
  id: string;
}

const spans: Recorded[] = [];
let next = 0;

/** A minimal TracerProvider (no SDK): records the spans errand starts through @opentelemetry/api. */
function recordingProvider(): TracerProvider {
  const tracer = {
    startSpan(name: string, options: SpanOptions = {}, ctx = context.active()): Span {
      const id = (++next).toString(16).padStart(16, "0");
      const record: Recorded = { name, kind: options.kind, attributes: { ...options.attributes }, exceptions: [], ended: false, parent: trace.getSpan(ctx)?.spanContext().spanId, id };
      spans.push(record);
      const span: Span = {
        spanContext: () => ({ traceId: "0".repeat(31) + "1", spanId: id, traceFlags: 1 }),
        setAttribute: (key, value) => ((record.attributes[key] = value), span),
        setAttributes: (attributes) => (Object.assign(record.attributes, attributes), span),
        addEvent: () => span,
        addLink: () => span,
        addLinks: () => span,
        setStatus: (status) => ((record.status = status), span),
        updateName: (n) => ((record.name = n), span),
        end: () => void (record.ended = true),
        isRecording: () => true,
        recordException: (exception) => void record.exceptions.push(exception),
      };
      return span;
    },
  } as Tracer;
  return { getTracer: () => tracer };
}

/** What an SDK's AsyncLocalStorage context manager does: the active span follows async code. */
function asyncContextManager(): ContextManager {
  const storage = new AsyncLocalStorage<Context>();
  const manager: ContextManager = {
    active: () => storage.getStore() ?? ROOT_CONTEXT,
    with: (ctx, fn, thisArg, ...args) => storage.run(ctx, () => fn.call(thisArg, ...args)),
    bind: (_ctx, target) => target,
    enable: () => manager,
    disable: () => manager,
  };
  return manager;
}

let t: TestErrand;
beforeAll(() => {
  trace.setGlobalTracerProvider(recordingProvider());
  context.setGlobalContextManager(asyncContextManager());
});
beforeEach(async () => {
  t = await testErrand();
  spans.length = 0;
});
afterEach(() => t.cleanup());

describe("OpenTelemetry spans", () => {
  it("wraps an enqueue in a producer span and each run in a consumer span, errors marked", async () => {
    const { id } = await t.errand.enqueue("send_receipt", { order_id: 1042 });
    await t.errand.enqueueMany([{ kind: "a", payload: 1 }, { kind: "b", payload: 2 }]);
    expect(spans.map((s) => [s.name, s.kind, s.attributes["messaging.batch.message_count"], s.status?.code, s.ended])).toEqual([
      ["send send_receipt", 3, 1, 1, true],
      ["send", 3, 2, 1, true],
    ]);
    spans.length = 0;
    const parents: (string | undefined)[] = [];
    const worker = t.errand.worker({
      handlers: {
        send_receipt: async () => void parents.push(trace.getActiveSpan()?.spanContext().spanId),
        a: async () => {},
        b: async () => { throw new Error("smtp down"); },
      },
    });
    expect(await worker.runOnce()).toBe(3);
    const run = spans.find((s) => s.name === "process send_receipt")!;
    expect(run).toMatchObject({ kind: 4, ended: true, status: { code: 1 } });
    expect(run.attributes).toMatchObject({ "messaging.system": "errand", "messaging.destination.name": "send_receipt", "messaging.message.id": id, "errand.job.attempt": 1, "errand.job.max_attempts": 8 });
    const failed = spans.find((s) => s.name === "process b")!;
    expect(failed.status).toEqual({ code: 2, message: "smtp down" });
    expect(String(failed.exceptions[0])).toContain("smtp down");
    expect(spans.every((s) => s.ended)).toBe(true);
    // The handler runs inside the run span's context: its own spans become children.
    expect(parents).toEqual([run.id]);
  });

  it("ends the span of an enqueue that fails validation, as an error", async () => {
    await expect(t.errand.enqueue("", {})).rejects.toThrow(/kind: must be a non-empty string/);
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({ name: "send", ended: true, status: { code: 2 } });
  });
});
