import { describe, expect, it } from "vitest";
import { PermanentError } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand();

const zeroWindow = { completed: 0, failed: 0, died: 0, timedOut: 0, cancelled: 0, failureRate: null };

describe("stats", () => {
  it("reports nothing for an empty queue", async () => {
    const stats = await t.errand.stats();
    expect(stats.kinds).toEqual({});
    expect(stats.total).toEqual({ ready: 0, scheduled: 0, running: 0, done: 0, dead: 0, cancelled: 0, oldestReadyAgeMs: null, expiredLeases: 0, lastMinute: zeroWindow, lastHour: zeroWindow });
    expect(stats.at).toBeInstanceOf(Date);
  });

  it("counts every state, outcome and age per kind and in total", async () => {
    // kind b: 2 succeed, 1 fails and is retried later, 1 fails permanently (dead).
    await t.errand.enqueueMany([1, 2, 3, 4].map((n) => ({ kind: "b", payload: n })));
    const worker = t.errand.worker({
      handlers: {
        b: async (n: number) => {
          if (n === 3) throw new Error("try later");
          if (n === 4) throw new PermanentError("bad input");
        },
      },
    });
    expect(await worker.runOnce()).toBe(4);
    // kind a: 3 due now (one waiting 90 s), 2 scheduled for later.
    const a = await t.errand.enqueueMany([{ kind: "a", payload: 1 }, { kind: "a", payload: 2 }, { kind: "a", payload: 3 }, { kind: "a", payload: 4, delay: 3_600_000 }, { kind: "a", payload: 5, delay: 60_000 }]);
    await t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() - interval '90 seconds' WHERE id = $1`, [a[0]!.id]);
    // kind c: one running with a live lease, two whose lease expired.
    await t.errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "c", payload: n })));
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, locked_by = 'w',
                 locked_until = CASE WHEN payload = '1' THEN now() + interval '1 hour' ELSE now() - interval '1 second' END WHERE kind = 'c'`);

    const stats = await t.errand.stats();
    expect(Object.keys(stats.kinds)).toEqual(["a", "b", "c"]);
    const { a: sa, b: sb, c: sc } = stats.kinds;
    expect(sa).toMatchObject({ ready: 3, scheduled: 2, running: 0, done: 0, dead: 0, expiredLeases: 0, lastMinute: zeroWindow, lastHour: zeroWindow });
    expect(sa!.oldestReadyAgeMs).toBeGreaterThanOrEqual(90_000);
    expect(sa!.oldestReadyAgeMs).toBeLessThan(100_000);
    const bWindow = { completed: 2, failed: 2, died: 1, timedOut: 0, cancelled: 0, failureRate: 0.5 };
    expect(sb).toEqual({ ready: 0, scheduled: 1, running: 0, done: 2, dead: 1, cancelled: 0, oldestReadyAgeMs: null, expiredLeases: 0, lastMinute: bWindow, lastHour: bWindow });
    expect(sc).toMatchObject({ ready: 0, scheduled: 0, running: 3, done: 0, dead: 0, expiredLeases: 2, oldestReadyAgeMs: null });
    expect(stats.total).toMatchObject({ ready: 3, scheduled: 3, running: 3, done: 2, dead: 1, expiredLeases: 2, lastMinute: bWindow, lastHour: bWindow });
    expect(stats.total.oldestReadyAgeMs).toBe(sa!.oldestReadyAgeMs);
  });

  it("counts a rescued lease as a failure, a release as none, and a retried dead job as no new death", async () => {
    await t.errand.enqueue("k", {}, { maxAttempts: 2 });
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'gone', locked_until = now() - interval '1 second'`);
    const worker = t.errand.worker({ handlers: { k: async () => { throw new Error("boom"); } } });
    expect(await worker.rescue()).toEqual({ ready: 1, dead: 0 });
    expect((await t.errand.stats()).kinds.k!.lastMinute).toEqual({ completed: 0, failed: 1, died: 0, timedOut: 0, cancelled: 0, failureRate: 1 });
    // A graceful release refunds the attempt: not a failure.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = attempts + 1, started_at = now(), locked_by = 'w', locked_until = now() + interval '1 minute'`);
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'ready', attempts = attempts - 1, locked_by = NULL`);
    expect((await t.errand.stats()).kinds.k!.lastMinute.failed).toBe(1);
    // The second attempt fails for good: one more failure, one death.
    expect(await worker.runOnce()).toBe(1);
    expect((await t.errand.stats()).kinds.k).toMatchObject({ dead: 1, lastMinute: { completed: 0, failed: 2, died: 1, failureRate: 1 } });
    await t.errand.dead.retry({ all: true });
    expect((await t.errand.stats()).kinds.k).toMatchObject({ dead: 0, ready: 1, lastMinute: { completed: 0, failed: 2, died: 1 } });
  });

  it("keeps outcomes in 10-second buckets: older than a minute counts for the hour only, older than an hour not at all", async () => {
    await t.errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "k", payload: n })));
    await t.errand.worker({ handlers: { k: async () => {} } }).runOnce();
    expect((await t.errand.stats()).total.lastMinute.completed).toBe(3);
    await t.sql(`UPDATE ${t.schema}.outcome_counts SET bucket = bucket - interval '5 minutes'`);
    const later = await t.errand.stats();
    expect(later.total.lastMinute).toEqual(zeroWindow);
    expect(later.total.lastHour).toEqual({ completed: 3, failed: 0, died: 0, timedOut: 0, cancelled: 0, failureRate: 0 });
    await t.sql(`UPDATE ${t.schema}.outcome_counts SET bucket = bucket - interval '2 hours'`);
    const much = await t.errand.stats();
    expect(much.total.lastHour).toEqual(zeroWindow);
    // The done jobs themselves are still there.
    expect(much.total.done).toBe(3);
  });

  it("keeps the done count right through deletes and truncation, in both tables done jobs are in", async () => {
    // Two plain jobs move to done_jobs as they complete; the keyed two stay in jobs.
    await t.errand.enqueueMany([1, 2, 3, 4].map((n) => ({ kind: n % 2 ? "odd" : "even", payload: n, ...(n > 2 ? { dedupeKey: `k${n}` } : {}) })));
    await t.errand.worker({ handlers: { odd: async () => {}, even: async () => {} } }).runOnce();
    expect((await t.errand.stats()).total.done).toBe(4);
    await t.sql(`DELETE FROM ${t.schema}.done_jobs WHERE payload = '1'`);
    await t.sql(`DELETE FROM ${t.schema}.jobs WHERE payload = '4'`);
    const stats = await t.errand.stats();
    expect([stats.kinds.odd!.done, stats.kinds.even!.done, stats.total.done]).toEqual([1, 1, 2]);
    await t.sql(`TRUNCATE ${t.schema}.jobs`);
    expect((await t.errand.stats()).total.done).toBe(1);
    await t.sql(`TRUNCATE ${t.schema}.done_jobs`);
    expect((await t.errand.stats()).total.done).toBe(0);
  });
});
