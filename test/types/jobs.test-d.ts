// Type tests, checked by `npm run typecheck` (tsc), never run: a `@ts-expect-error` line
// that compiles is itself an error, so each one proves that the line below it is refused.
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { Errand, type Handlers, type Job, isolated, type JobOf, type JobsDefinition, type JobsOf, type StandardSchemaV1, defineJobs, json } from "../../src/index.js";
import { createDashboard } from "../../src/dashboard/index.js";
import { drain, enqueued, openTestErrand } from "../../src/testing/index.js";

const jobs = defineJobs({
  send_welcome_email: { payload: json<{ userId: number }>(), maxAttempts: 5 },
  resize_avatar: { payload: z.object({ userId: z.number().int(), sizes: z.array(z.number()) }), leaseMs: 60_000 },
  sweep: { payload: json<{ olderThanDays?: number }>() },
});
type Jobs = JobsOf<typeof jobs>;

declare const errand: Errand<Jobs>;
declare const untyped: Errand;

describe("a job map", () => {
  it("comes from defineJobs: json<T>() and a schema's output", () => {
    expectTypeOf<Jobs>().toEqualTypeOf<{
      send_welcome_email: { userId: number };
      resize_avatar: { userId: number; sizes: number[] };
      sweep: { olderThanDays?: number };
    }>();
    expectTypeOf(Errand.open({ jobs })).resolves.toEqualTypeOf<Errand<Jobs>>();
    expectTypeOf(openTestErrand({ jobs })).resolves.toEqualTypeOf<Errand<Jobs>>();
  });

  it("or is an interface given as the type argument", () => {
    interface Payment {
      orderId: number;
      note?: string;
      lines: readonly { sku: string; cents: number }[];
    }
    interface AppJobs {
      charge: Payment;
      ping: null;
    }
    expectTypeOf(Errand.open<AppJobs>()).resolves.toEqualTypeOf<Errand<AppJobs>>();
  });

  it("refuses payload types that are not JSON, at the definition", () => {
    interface WithDate {
      at: Date;
    }
    interface WithBigint {
      n: bigint;
    }
    interface WithFunction {
      f: () => void;
    }
    interface WithUndefined {
      u: string | undefined;
    }
    // @ts-expect-error a Date does not survive JSON
    json<WithDate>();
    // @ts-expect-error nor does a bigint
    json<{ n: bigint }>();
    // @ts-expect-error a Map nested in an array
    json<{ maps: Map<string, number>[] }>();
    // @ts-expect-error a Date in an interface of the map
    void Errand.open<{ remind: WithDate }>();
    // @ts-expect-error a bigint
    void Errand.open<{ count: WithBigint }>();
    // @ts-expect-error a function
    void Errand.open<{ call: WithFunction }>();
    // @ts-expect-error a required property that may be undefined (JSON drops it)
    void Errand.open<{ maybe: WithUndefined }>();
    // @ts-expect-error a schema whose output holds a Date
    defineJobs({ remind: { payload: z.object({ at: z.date() }) } });
    // @ts-expect-error a payload that is undefined itself
    defineJobs({ nothing: { payload: json<undefined>() } });
  });
});

describe("enqueue", () => {
  it("takes the map's kinds with their payloads", () => {
    expectTypeOf(errand.enqueue("send_welcome_email", { userId: 42 }, { dedupeKey: "welcome:42" })).resolves.toEqualTypeOf<{ readonly id: string; readonly duplicate: boolean; readonly replaced?: true }>();
    void errand.enqueue("sweep", {});
  });

  it("refuses a misspelt kind, a wrong payload, a Date or undefined", () => {
    // @ts-expect-error misspelt kind
    void errand.enqueue("send_welcome_emial", { userId: 42 });
    // @ts-expect-error wrong payload type
    void errand.enqueue("send_welcome_email", { userId: "42" });
    // @ts-expect-error another kind's payload
    void errand.enqueue("send_welcome_email", { olderThanDays: 3 });
    // @ts-expect-error a Date where a number goes
    void errand.enqueue("send_welcome_email", { userId: new Date() });
    // @ts-expect-error no payload
    void errand.enqueue("send_welcome_email", undefined);
  });

  it("enqueueMany takes a union of { kind, payload }, the payload optional only where {} is one", () => {
    void errand.enqueueMany([
      { kind: "send_welcome_email", payload: { userId: 1 }, priority: 5 },
      { kind: "resize_avatar", payload: { userId: 1, sizes: [64, 128] } },
      { kind: "sweep" },
    ]);
    void errand.enqueueMany([1, 2].map((userId) => ({ kind: "send_welcome_email", payload: { userId } })));
    // @ts-expect-error the payload of another kind
    void errand.enqueueMany([{ kind: "resize_avatar", payload: { userId: 1 } }]);
    // @ts-expect-error a payload is required here
    void errand.enqueueMany([{ kind: "send_welcome_email" }]);
    // @ts-expect-error an unknown kind
    void errand.enqueueMany([{ kind: "sweeep", payload: {} }]);
  });
});

describe("handlers", () => {
  it("get their kind's payload, not never", () => {
    void errand.worker({
      handlers: {
        send_welcome_email: async (payload, ctx) => {
          expectTypeOf(payload).toEqualTypeOf<{ userId: number }>();
          expectTypeOf(ctx.idempotencyKey).toBeString();
        },
        resize_avatar: async ({ sizes }) => {
          expectTypeOf(sizes).toEqualTypeOf<number[]>();
        },
      },
    });
  });

  it("refuse a wrong payload type, an unknown kind, and arithmetic on a string", () => {
    void errand.worker({
      handlers: {
        // @ts-expect-error the handler expects another payload
        send_welcome_email: async (payload: { userId: string }) => payload.userId,
      },
    });
    void errand.worker({
      handlers: {
        // @ts-expect-error not a kind of the map
        send_welcome_emial: async () => {},
      },
    });
    const handlers: Handlers<Jobs> = {
      // @ts-expect-error userId is a number: no string methods
      send_welcome_email: async ({ userId }) => userId.toUpperCase(),
    };
    void handlers;
  });

  it("may run isolated, typed by their kind", () => {
    const handlers: Handlers<Jobs> = {
      resize_avatar: isolated<Jobs["resize_avatar"]>(new URL("./resize.js", import.meta.url)),
      send_welcome_email: isolated(new URL("./mail.js", import.meta.url)),
    };
    void handlers;
    // @ts-expect-error an isolated handler declared for another kind's payload
    const wrong: Handlers<Jobs> = { resize_avatar: isolated<{ path: string }>(new URL("./resize.js", import.meta.url)) };
    void wrong;
  });

  it("are typed in drain, as in a worker", async () => {
    const result = await drain(errand, {
      send_welcome_email: async ({ userId }) => {
        expectTypeOf(userId).toBeNumber();
      },
    });
    // @ts-expect-error not a kind of the map
    await drain(errand, { nope: async () => {} });
    const first = result.jobs[0]!;
    if (first.kind === "resize_avatar") expectTypeOf(first.payload.sizes).toEqualTypeOf<number[]>();
  });

  it("of an untyped errand declare their payload, or get unknown", () => {
    void untyped.worker({
      handlers: {
        annotated: async ({ orderId }: { orderId: number }) => orderId + 1,
        // @ts-expect-error an unannotated payload is unknown, not never: no property access
        unannotated: async ({ userId }) => userId + 1,
      },
    });
  });
});

describe("reading jobs", () => {
  it("getJob returns a job per kind: checking kind narrows the payload", async () => {
    const job = await errand.getJob("1");
    expectTypeOf(job).toEqualTypeOf<JobOf<Jobs> | null>();
    if (job?.kind === "send_welcome_email") expectTypeOf(job.payload).toEqualTypeOf<{ userId: number }>();
    // @ts-expect-error the payload is a union until the kind is checked
    void job?.payload.userId;
    const dead = await errand.dead.list({ kind: "resize_avatar" });
    expectTypeOf(dead[0]!.payload).toEqualTypeOf<{ userId: number } | { userId: number; sizes: number[] } | { olderThanDays?: number }>();
    expectTypeOf(await untyped.getJob("1")).toEqualTypeOf<Job | null>();
  });

  it("enqueued narrows by its kind and types the payload pattern", async () => {
    const receipts = await enqueued(errand, { kind: "send_welcome_email", payload: { userId: 42 } });
    expectTypeOf(receipts[0]!.payload).toEqualTypeOf<{ userId: number }>();
    // @ts-expect-error the pattern's field has the wrong type
    await enqueued(errand, { kind: "send_welcome_email", payload: { userId: "42" } });
    // @ts-expect-error not a kind of the map
    await enqueued(errand, { kind: "send_receipt" });
  });
});

describe("schedules", () => {
  it("declare kinds with their payloads", () => {
    void errand.schedules.declare([
      { name: "nightly-sweep", cron: "0 3 * * *", kind: "sweep" },
      { name: "welcome-admin", cron: "@daily", kind: "send_welcome_email", payload: { userId: 1 } },
    ]);
    // @ts-expect-error a payload of the wrong type
    void errand.schedules.declare([{ name: "x", cron: "@daily", kind: "send_welcome_email", payload: { userId: "1" } }]);
    // @ts-expect-error a misspelt kind
    void errand.schedules.declare([{ name: "x", cron: "@daily", kind: "swep" }]);
    // Untyped: any kind, any payload, as before.
    void untyped.schedules.declare([{ name: "x", cron: "@daily", kind: "anything", payload: { a: 1 } }]);
  });
});

describe("a typed errand", () => {
  it("goes wherever an untyped one does: the dashboard, your own helpers", () => {
    expectTypeOf(errand).toExtend<Errand>();
    void createDashboard(errand);
  });
});

describe("Standard Schema", () => {
  it("accepts a hand-written schema and infers its output from validate", () => {
    const even: StandardSchemaV1<unknown, { n: number }> = {
      "~standard": {
        version: 1,
        vendor: "test",
        validate: (value) =>
          typeof value === "object" && value !== null && "n" in value && typeof value.n === "number" && value.n % 2 === 0
            ? { value: { n: value.n } }
            : { issues: [{ message: "must be even", path: ["n"] }] },
      },
    };
    const defined = defineJobs({ even: { payload: even } });
    expectTypeOf(defined).toExtend<JobsDefinition<{ even: { n: number } }>>();
    expectTypeOf<JobsOf<typeof defined>>().toEqualTypeOf<{ even: { n: number } }>();
  });
});
