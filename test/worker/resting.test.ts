import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { eventually, useTestErrand } from "../support/db.js";

// A worker at rest (nothing ready, nothing held back by a limit) does not poll every
// pollIntervalMs: it asks when its next job is due, sleeps until then, and wakes for
// notifications, its own retries and rescues (see Producer.listening).
const t = useTestErrand();

/** An errand on the test's database whose statements are counted by what they do. */
function countingErrand(): { errand: Errand; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const what = (text: string) =>
    text.includes("claim_keyed(") ? "keyed claim" : /FOR UPDATE SKIP LOCKED/.test(text) && text.includes("SET status = 'running'") ? "claim" : text.includes("AS plain_ms") ? "ask" : text.includes("FROM") && text.includes(".pauses UNION ALL") ? "pauses" : "other";
  const driver: Driver = {
    ...t.errand.driver,
    run: <Row>(statement: Statement, params: readonly unknown[]) => {
      const kind = what(statement.text);
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      return t.errand.driver.run<Row>(statement, params);
    },
    close: async () => {},
  };
  return { errand: Errand.fromDriver(driver, { schema: t.schema }), counts };
}

it("starts a job due later when it is due, with no poll to find it", async () => {
  const ran: string[] = [];
  const worker = t.errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) }, pollIntervalMs: 600_000, rescueIntervalMs: 0 });
  await worker.start();
  try {
    // Its notification comes at the insert, a second before it is due: the worker must remember when.
    const { id } = await t.errand.enqueue("ping", {}, { delay: 1_000 });
    await eventually(() => ran.includes(id), 10_000, "the job to run when due");
  } finally {
    await worker.stop();
  }
  const [row] = await t.sql<{ on_time: boolean }>(`SELECT started_at >= run_at AS on_time FROM ${t.schema}.all_jobs`);
  expect(row?.on_time).toBe(true);
});

it("at rest reads neither jobs nor pauses every second: it asks once when the next job is due", async () => {
  const { errand, counts } = countingErrand();
  const ran: string[] = [];
  const worker = errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) }, rescueIntervalMs: 0 });
  await worker.start();
  try {
    const { id } = await t.errand.enqueue("ping", {}, { delay: 2_500 });
    await eventually(() => ran.includes(id), 10_000, "the job to run when due");
  } finally {
    await worker.stop();
  }
  // The default pollIntervalMs is 1 s: a polling worker would have claimed and read the pauses twice more meanwhile.
  expect(counts.get("pauses")).toBe(1); // at start
  // At start, on the enqueue's notification, when due, and the one after that finds the queue
  // empty. The worker's look at the inserting transactions in flight is over before start()
  // resolves, so the test's enqueue is not among them (src/worker/waiting.ts).
  expect(counts.get("claim")).toBeLessThanOrEqual(4);
  expect(counts.get("ask")).toBeGreaterThanOrEqual(1);
});

it("starts a retry this worker wrote when it is due, with no poll to find it", async () => {
  let attempts = 0;
  const worker = t.errand.worker({
    handlers: {
      flaky: async () => {
        if (++attempts === 1) throw new Error("first attempt fails");
      },
    },
    pollIntervalMs: 600_000,
    rescueIntervalMs: 0,
  });
  await worker.start();
  try {
    await t.errand.enqueue("flaky", {}, { retry: { baseDelayMs: 500, jitter: 0 } });
    await eventually(async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs`))[0]?.status === "done", 10_000, "the retry to run");
  } finally {
    await worker.stop();
  }
  expect(attempts).toBe(2);
});

it("a rescue in another process wakes a worker at rest", async () => {
  const ran: string[] = [];
  const worker = t.errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) }, pollIntervalMs: 600_000, rescueIntervalMs: 0 });
  await worker.start();
  try {
    const { id } = await t.errand.enqueue("ping", {}, { delay: 3_600_000 });
    // Its worker died holding it: only a rescue makes it ready, and no insert notifies.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), run_at = now(), locked_by = 'gone', locked_until = now() - interval '1 second'`);
    expect(await t.errand.rescuer().runOnce()).toEqual({ ready: 1, dead: 0 });
    await eventually(() => ran.includes(id), 10_000, "the rescued job to run");
  } finally {
    await worker.stop();
  }
});
