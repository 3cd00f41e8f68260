import { describe, expect, it } from "vitest";
import { ValidationError, parseRate } from "../../src/index.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

interface Claimed {
  id: string | null;
  concurrency_key: string | null;
  attempts: number | null;
  wait_ms: number | null;
}

/** One keyed claim, as a worker makes it: the claimed rows and the closing row (cursor, wait). */
async function claimKeyed(slots: number, after: string | null = null): Promise<{ jobs: Claimed[]; last: string | null; waitMs: number | null }> {
  const rows = await t.sql<Claimed>(`SELECT id, concurrency_key, attempts, wait_ms FROM ${t.schema}.claim_keyed($1, 'w1', '{}', 60000, $2, 'default', ARRAY(SELECT DISTINCT kind FROM ${t.schema}.all_jobs))`, [slots, after]);
  const meta = rows.at(-1)!;
  expect(meta.id).toBeNull();
  return { jobs: rows.slice(0, -1), last: meta.concurrency_key, waitMs: meta.wait_ms === null ? null : Number(meta.wait_ms) };
}

const keysOf = (jobs: Claimed[]) => jobs.map((job) => job.concurrency_key);
const enqueueKeyed = (key: string, n: number, kind = "k") => t.errand.enqueueMany(Array.from({ length: n }, (_, i) => ({ kind, payload: { key, i }, concurrencyKey: key })));

describe("concurrency keys and limits", () => {
  it("a key's concurrency limit holds across claims until its jobs finish", async () => {
    await t.errand.limits.set("tenant:1", { concurrency: 2 });
    await enqueueKeyed("tenant:1", 5);
    const first = await claimKeyed(10);
    expect(keysOf(first.jobs)).toEqual(["tenant:1", "tenant:1"]);
    expect((await claimKeyed(10)).jobs).toEqual([]); // two running: the limit
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'done', locked_until = NULL WHERE id = $1`, [first.jobs[0]!.id]);
    expect((await claimKeyed(10)).jobs).toHaveLength(1);
  });

  it("the plain claim leaves keyed jobs alone and the keyed claim leaves plain jobs alone", async () => {
    await t.errand.enqueue("plain", {});
    await enqueueKeyed("tenant:1", 1);
    const worker = t.errand.worker({ handlers: { plain: async () => {}, k: async () => {} } });
    expect(await worker.runOnce()).toBe(2); // runOnce claims both ways
    const rows = await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs`);
    expect(rows.every((row) => row.status === "done")).toBe(true);
    expect((await claimKeyed(10)).jobs).toEqual([]);
  });

  it("takes keys round-robin: a key with many jobs does not crowd out one with few", async () => {
    await enqueueKeyed("a", 50);
    await enqueueKeyed("b", 3);
    await enqueueKeyed("c", 1);
    const { jobs, last } = await claimKeyed(6);
    expect(keysOf(jobs)).toEqual(["a", "b", "c", "a", "b", "a"]);
    expect(last).toBe("a");
    // The next claim resumes after the last key visited.
    const next = await claimKeyed(3, last);
    expect(keysOf(next.jobs)).toEqual(["b", "a", "a"]);
  });

  it("a prefix limit applies to each matching key on its own; an exact key's limit wins", async () => {
    await t.errand.limits.set("tenant:*", { concurrency: 1 });
    await t.errand.limits.set("tenant:vip", { concurrency: 3 });
    await enqueueKeyed("tenant:1", 3);
    await enqueueKeyed("tenant:2", 3);
    await enqueueKeyed("tenant:vip", 5);
    await enqueueKeyed("other", 2);
    const { jobs } = await claimKeyed(100);
    const count = (key: string) => jobs.filter((job) => job.concurrency_key === key).length;
    expect([count("tenant:1"), count("tenant:2"), count("tenant:vip"), count("other")]).toEqual([1, 1, 3, 2]);
    const list = await t.errand.limits.list();
    expect(list).toEqual([
      { key: "tenant:*", concurrency: 1, rate: null, running: 5, ready: 6, rateHeld: 0 },
      { key: "tenant:vip", concurrency: 3, rate: null, running: 3, ready: 2, rateHeld: 0 },
    ]);
  });

  it("a rate limit holds back the jobs past it, spends none of their attempts and says when the next may start", async () => {
    await t.errand.limits.set("api", { rate: "3/hour" }); // an hour: the test's own pace cannot matter
    await enqueueKeyed("api", 5);
    const first = await claimKeyed(10);
    expect(first.jobs).toHaveLength(3);
    // Due when the first start leaves its window: an hour after it, less the time since.
    expect(first.waitMs).toBeGreaterThan(3_600_000 - 10_000);
    expect(first.waitMs).toBeLessThanOrEqual(3_600_000);
    const waiting = await t.sql<{ attempts: number; status: string }>(`SELECT attempts, status FROM ${t.schema}.all_jobs WHERE status = 'ready'`);
    expect(waiting).toEqual([
      { attempts: 0, status: "ready" },
      { attempts: 0, status: "ready" },
    ]);
    // Time travel: the three starts move 59 minutes into the past; the window still holds them.
    await t.sql(`UPDATE ${t.schema}.jobs SET started_at = started_at - interval '59 minutes' WHERE started_at IS NOT NULL`);
    const second = await claimKeyed(10);
    expect(second.jobs).toEqual([]);
    expect(second.waitMs).toBeGreaterThan(60_000 - 10_000);
    expect(second.waitMs).toBeLessThanOrEqual(60_000);
    await t.sql(`UPDATE ${t.schema}.jobs SET started_at = started_at - interval '1 minute' WHERE started_at IS NOT NULL`);
    const third = await claimKeyed(10);
    expect(third.jobs).toHaveLength(2);
    expect(third.jobs.map((job) => Number(job.attempts))).toEqual([1, 1]);
    expect(third.waitMs).toBeNull(); // nothing left waiting
  });

  it("a worker keeps every key within its limit and runs every job", async () => {
    await t.errand.limits.set("t:*", { concurrency: 2 });
    for (const key of ["t:1", "t:2", "t:3"]) await enqueueKeyed(key, 12);
    await enqueueKeyed("t:4", 4, "slow"); // a key whose jobs take longer
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    let done = 0;
    const run = async ({ key }: { key: string }, ms: number) => {
      running.set(key, (running.get(key) ?? 0) + 1);
      most.set(key, Math.max(most.get(key) ?? 0, running.get(key)!));
      await new Promise((resolve) => setTimeout(resolve, ms));
      running.set(key, running.get(key)! - 1);
      done++;
    };
    const worker = t.errand.worker({ concurrency: 10, pollIntervalMs: 5_000, handlers: { k: (p: { key: string }) => run(p, 5), slow: (p: { key: string }) => run(p, 20) } });
    await worker.start();
    try {
      await eventually(() => done === 40, 20_000, "40 jobs done");
    } finally {
      await worker.stop();
    }
    expect(Math.max(...most.values())).toBe(2);
    const rows = await t.sql<{ status: string; attempts: number }>(`SELECT status, attempts FROM ${t.schema}.all_jobs`);
    expect(rows.filter((row) => row.status === "done" && Number(row.attempts) === 1)).toHaveLength(40);
  });

  it("a worker waiting on a rate sleeps until the next start is due, woken by no poll", async () => {
    await t.errand.limits.set("api", { rate: "4/s" });
    await enqueueKeyed("api", 6);
    const starts: number[] = [];
    // The poll is a minute: only the rate's own wake-up can start the last two in time.
    const worker = t.errand.worker({ concurrency: 10, pollIntervalMs: 60_000, handlers: { k: async () => void starts.push(Date.now()) } });
    await worker.start();
    try {
      await eventually(() => starts.length === 6, 5_000, "6 starts");
    } finally {
      await worker.stop();
    }
    // The database's start times: at most 4 in any second, and each job charged one attempt.
    const rows = await t.sql<{ attempts: number; at: number }>(`SELECT attempts, extract(epoch FROM started_at)::float8 * 1000 AS at FROM ${t.schema}.all_jobs ORDER BY started_at`);
    expect(rows.map((row) => Number(row.attempts))).toEqual([1, 1, 1, 1, 1, 1]);
    expect(Number(rows[4]!.at) - Number(rows[0]!.at)).toBeGreaterThanOrEqual(1000);
    expect(Number(rows[5]!.at) - Number(rows[1]!.at)).toBeGreaterThanOrEqual(1000);
  });

  it("a kind's concurrencyKey keys its jobs, unless an enqueue gives its own", async () => {
    await t.errand.limits.set("kind:mail", { concurrency: 1 });
    const { Errand } = await import("../../src/index.js");
    const mail = Errand.fromDriver(t.errand.driver, { schema: t.schema, kinds: { mail: { concurrencyKey: "kind:mail" } } });
    await mail.enqueue("mail", {});
    await mail.enqueue("mail", {});
    await mail.enqueue("mail", {}, { concurrencyKey: "own" });
    const { jobs } = await claimKeyed(10);
    expect(keysOf(jobs).sort()).toEqual(["kind:mail", "own"]);
  });
});

describe("bad limits and keys", () => {
  const nothingWritten = async () => {
    expect(await t.sql(`SELECT 1 FROM ${t.schema}.all_jobs`)).toEqual([]);
    expect(await t.sql(`SELECT 1 FROM ${t.schema}.limits`)).toEqual([]);
  };

  it.each([
    [{ concurrency: 0 }, "concurrency", /from 1/],
    [{ concurrency: -2 }, "concurrency", /from 1/],
    [{ concurrency: 1.5 }, "concurrency", /integer/],
    [{ rate: "10/fortnight" }, "rate", /must be a rate like/],
    [{ rate: "0/s" }, "rate", /at least 1/],
    [{ rate: "-5/s" }, "rate", /must be a rate like/],
    [{ rate: { count: 10 } }, "rate.periodMs", /integer/],
    [{ rate: 10 }, "rate", /must be a rate like/],
    [{ concurency: 2 }, "options.concurency", /did you mean 'concurrency'/],
    [{}, "options", /give concurrency, rate or both/],
  ])("limits.set(%j) fails naming %s, nothing written", async (options, field, message) => {
    const error = await t.errand.limits.set("k", options as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field });
    expect((error as Error).message).toMatch(message);
    await nothingWritten();
  });

  it.each([[42], [""], [null], ["x".repeat(1001)]])("a concurrency key %j is refused, naming the field, nothing written", async (key) => {
    await expect(t.errand.limits.set(key as never, { concurrency: 1 })).rejects.toMatchObject({ field: "key" });
    await expect(t.errand.enqueue("k", {}, { concurrencyKey: key as never })).rejects.toMatchObject({ field: "concurrencyKey" });
    await expect(t.errand.enqueueMany([{ kind: "k" }, { kind: "k", concurrencyKey: key as never }])).rejects.toMatchObject({ field: "jobs[1].concurrencyKey" });
    await nothingWritten();
  });
});

describe("parseRate", () => {
  it.each([
    ["10/s", 10, 1000],
    ["600/min", 600, 60_000],
    ["600 per minute", 600, 60_000],
    ["1000/hour", 1000, 3_600_000],
    ["5/10s", 5, 10_000],
    ["20 per seconds", 20, 1000],
    [{ count: 3, periodMs: 250 }, 3, 250],
  ])("%j is %i per %i ms", (text, count, periodMs) => {
    expect(parseRate(text, "rate")).toEqual({ count, periodMs });
  });
});
