import { describe, expect, it } from "vitest";
import { ErrandError, type WorkerEvent } from "../../src/index.js";
import { Worker } from "../../src/worker/worker.js";
import { eventually, useTestErrand } from "../support/db.js";

// The worker reads the process's time only from the Clock it is given: its own copy of
// each lease (LocalLeases), the buffer's wait and durations are measured on it.
const t = useTestErrand();

describe("a worker's clock", () => {
  it("decides when a lease the heartbeats could not extend has run out: moved past it, the handler is aborted", async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const events: WorkerEvent[] = [];
    let reason: unknown;
    const { id } = await t.errand.enqueue("wait", {});
    // A heartbeat would not come for 59 s; the worker checks its own copy of the lease every 250 ms.
    const worker = new Worker(
      t.errand.driver,
      t.schema,
      t.errand.kinds,
      {
        leaseMs: 60_000,
        heartbeatIntervalMs: 59_000,
        rescueIntervalMs: 0,
        onEvent: (event) => void events.push(event),
        handlers: {
          wait: (_: unknown, ctx) =>
            new Promise<void>((resolve) => {
              ctx.signal.addEventListener("abort", () => {
                reason = ctx.signal.reason;
                resolve();
              });
            }),
        },
      },
      clock,
    );
    await worker.start();
    try {
      await eventually(() => worker.activeCount === 1, 10_000, "the handler to start");
      now += 60_000; // on the real clock, the lease has 60 s left
      await eventually(() => reason !== undefined, 10_000, "the handler to be aborted");
      expect(reason).toBeInstanceOf(ErrandError);
      expect((reason as ErrandError).code).toBe("lease_expired");
      expect(events).toContainEqual({ type: "lease_lost", jobIds: [id] });
    } finally {
      await worker.stop({ timeout: 5_000 });
    }
    // The handler returned after the abort: a success is still written (the database's lease held).
    expect(await t.sql(`SELECT status FROM ${t.schema}.all_jobs`)).toEqual([{ status: "done" }]);
  });
});
