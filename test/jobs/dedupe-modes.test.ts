import { describe, expect, it } from "vitest";
import { type DedupeMode, type EnqueueResult, ValidationError } from "../../src/index.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

/** Every row of the test's jobs table: id, status, payload, dedupe key. */
async function rows(): Promise<{ id: string; status: string; payload: unknown; dedupe_key: string | null }[]> {
  return t.sql(`SELECT id::text, status, payload, dedupe_key FROM ${t.schema}.all_jobs ORDER BY id`);
}

/** Runs one claim with `handler` for kind "task" and waits for it to finish. */
async function runAll(handler: () => Promise<void> | void = () => {}): Promise<void> {
  await t.errand.worker({ handlers: { task: handler } }).runOnce();
}

/**
 * Starts a worker whose handler for "task" waits until `finish()` is called, and returns
 * once `id` is running; `done` resolves when the worker's claim has finished.
 */
async function holdRunning(id: string): Promise<{ finish: () => void; done: Promise<number> }> {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const done = t.errand.worker({ handlers: { task: () => gate } }).runOnce();
  await eventually(async () => (await t.errand.getJob(id))?.status === "running", 10_000, `job ${id} running`);
  return { finish, done };
}

function enqueue(payload: Record<string, unknown>, dedupe: DedupeMode | undefined, extra: Record<string, unknown> = {}): Promise<EnqueueResult> {
  return t.errand.enqueue("task", payload, { dedupeKey: "k", ...(dedupe === undefined ? {} : { dedupe }), ...extra });
}

describe('dedupe "retained" (the default)', () => {
  it("holds the key after the job is done, until its row is pruned", async () => {
    const first = await enqueue({ n: 1 }, undefined);
    await runAll();
    expect(await enqueue({ n: 2 }, undefined)).toEqual({ id: first.id, duplicate: true });
    expect(await enqueue({ n: 3 }, "retained")).toEqual({ id: first.id, duplicate: true });
    await t.sql(`DELETE FROM ${t.schema}.jobs`); // what the pruner does to a done row
    const again = await enqueue({ n: 4 }, undefined);
    expect(again.duplicate).toBe(false);
    expect((await rows()).map((r) => r.payload)).toEqual([{ n: 4 }]);
  });

  it("stores no mode for it, as a plain-SQL insert does, and plain SQL still sees the key taken", async () => {
    await enqueue({ n: 1 }, "retained");
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload, dedupe_key) VALUES ('task', '{}', 'k') ON CONFLICT (dedupe_key) DO NOTHING`);
    expect(await t.sql(`SELECT dedupe_mode, dedupe_until FROM ${t.schema}.all_jobs`)).toEqual([{ dedupe_mode: null, dedupe_until: null }]);
  });
});

describe('dedupe "active"', () => {
  it("holds the key while the job waits, runs or waits for a retry, and frees it when the job is done", async () => {
    const first = await enqueue({ n: 1 }, "active");
    expect(await enqueue({ n: 2 }, "active")).toEqual({ id: first.id, duplicate: true });
    const running = await holdRunning(first.id);
    expect(await enqueue({ n: 3 }, "active")).toEqual({ id: first.id, duplicate: true });
    running.finish();
    await running.done;
    expect((await t.errand.getJob(first.id))?.status).toBe("done");
    const second = await enqueue({ n: 4 }, "active");
    expect(second.duplicate).toBe(false);
    expect(await rows()).toEqual([
      { id: first.id, status: "done", payload: { n: 1 }, dedupe_key: null },
      { id: second.id, status: "ready", payload: { n: 4 }, dedupe_key: "k" },
    ]);
  });

  it("holds it through a failed attempt's retry wait, and frees it when the job is dead", async () => {
    const first = await enqueue({ n: 1 }, "active", { maxAttempts: 2 });
    await runAll(() => {
      throw new Error("boom");
    });
    expect((await t.errand.getJob(first.id))?.status).toBe("ready");
    expect(await enqueue({ n: 2 }, "active")).toEqual({ id: first.id, duplicate: true });
    await t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() - interval '1 second'`); // time travel past the backoff
    await runAll(() => {
      throw new Error("boom again");
    });
    expect((await t.errand.getJob(first.id))?.status).toBe("dead");
    expect((await enqueue({ n: 3 }, "active")).duplicate).toBe(false);
  });
});

describe('dedupe "queued"', () => {
  it("holds the key until a worker starts the job; then the same key enqueues a new job", async () => {
    const first = await enqueue({ n: 1 }, "queued");
    expect(await enqueue({ n: 2 }, "queued")).toEqual({ id: first.id, duplicate: true });
    const running = await holdRunning(first.id);
    const second = await enqueue({ n: 3 }, "queued");
    expect(second.duplicate).toBe(false);
    expect(await enqueue({ n: 4 }, "queued")).toEqual({ id: second.id, duplicate: true });
    running.finish();
    await running.done;
    expect(await rows()).toEqual([
      { id: first.id, status: "done", payload: { n: 1 }, dedupe_key: null },
      { id: second.id, status: "ready", payload: { n: 3 }, dedupe_key: "k" },
    ]);
  });

  it("lets exactly one of 20 concurrent enqueues take over the key of a running job", async () => {
    const first = await enqueue({ n: 0 }, "queued");
    const running = await holdRunning(first.id);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => enqueue({ n: i + 1 }, "queued")));
    running.finish();
    await running.done;
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(results[0]!.id).not.toBe(first.id);
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'ready'`)).toEqual([{ n: 1 }]);
  });
});

describe('dedupe "replace" (debounce)', () => {
  it("gives the waiting job the latest payload and run time, keeping its id", async () => {
    const first = await enqueue({ n: 1 }, "replace", { delay: 60_000 });
    const second = await enqueue({ n: 2 }, "replace", { delay: 120_000, priority: 5 });
    expect(second).toEqual({ id: first.id, duplicate: true, replaced: true });
    const [row] = await t.sql<{ payload: unknown; priority: number; secs: number }>(
      `SELECT payload, priority, round(extract(epoch FROM run_at - now()))::int AS secs FROM ${t.schema}.all_jobs`,
    );
    expect(row).toMatchObject({ payload: { n: 2 }, priority: 5 });
    expect(row!.secs).toBeGreaterThan(100);
  });

  it("enqueues a new job when the waiting one has started; the running one keeps its payload", async () => {
    const first = await enqueue({ n: 1 }, "replace");
    const running = await holdRunning(first.id);
    const second = await enqueue({ n: 2 }, "replace");
    expect(second.duplicate).toBe(false);
    expect(await enqueue({ n: 3 }, "replace")).toEqual({ id: second.id, duplicate: true, replaced: true });
    running.finish();
    await running.done;
    expect(await rows()).toEqual([
      { id: first.id, status: "done", payload: { n: 1 }, dedupe_key: null },
      { id: second.id, status: "ready", payload: { n: 3 }, dedupe_key: "k" },
    ]);
  });

  it("is a plain duplicate when the key's job runs under a mode that holds it while running", async () => {
    const first = await enqueue({ n: 1 }, "active");
    const running = await holdRunning(first.id);
    expect(await enqueue({ n: 2 }, "replace")).toEqual({ id: first.id, duplicate: true });
    running.finish();
    await running.done;
    expect((await rows()).map((r) => r.payload)).toEqual([{ n: 1 }]);
  });

  it("keeps the last of a batch's payloads for one key, and one job", async () => {
    const results = await t.errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "task", payload: { n }, dedupeKey: "k", dedupe: "replace" as const })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.map((r) => r.duplicate)).toEqual([false, true, true]);
    expect((await rows()).map((r) => r.payload)).toEqual([{ n: 3 }]);
  });

  it("leaves one job with one of the payloads under 20 concurrent enqueues", async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => enqueue({ n: i }, "replace")));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(results.filter((r) => r.replaced === true)).toHaveLength(19);
    const all = await rows();
    expect(all).toHaveLength(1);
    expect((all[0]!.payload as { n: number }).n).toBeGreaterThanOrEqual(0);
  });
});

describe("dedupe { ttlMs }", () => {
  it("holds the key for the period whatever the job's state, then frees it", async () => {
    const first = await enqueue({ n: 1 }, { ttlMs: 60_000 });
    await runAll();
    expect(await enqueue({ n: 2 }, { ttlMs: 60_000 })).toEqual({ id: first.id, duplicate: true });
    await t.sql(`UPDATE ${t.schema}.jobs SET dedupe_until = now() - interval '1 millisecond'`); // time travel past the ttl
    const second = await enqueue({ n: 3 }, { ttlMs: 60_000 });
    expect(second.duplicate).toBe(false);
    expect((await rows()).map((r) => [r.status, r.dedupe_key])).toEqual([
      ["done", null],
      ["ready", "k"],
    ]);
  });
});

describe("every mode under 20 concurrent enqueues of one key", () => {
  const modes: (DedupeMode | undefined)[] = [undefined, "retained", "active", "queued", "replace", { ttlMs: 60_000 }];
  it.each(modes.map((mode) => [JSON.stringify(mode) ?? "default", mode] as const))("%s: one job, one id", async (_, mode) => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => enqueue({ n: i }, mode)));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 1 }]);
  });

  it.each(modes.map((mode) => [JSON.stringify(mode) ?? "default", mode] as const))("%s: a batch naming the key twice after its job is done", async (_, mode) => {
    await enqueue({ n: 0 }, mode);
    await runAll();
    const results = await t.errand.enqueueMany([1, 2].map((n) => ({ kind: "task", payload: { n }, dedupeKey: "k", ...(mode === undefined ? {} : { dedupe: mode }) })));
    expect(results[1]!.id).toBe(results[0]!.id);
    const held = mode === undefined || mode === "retained" || typeof mode === "object";
    expect(results.map((r) => r.duplicate)).toEqual(held ? [true, true] : [false, true]);
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: held ? 1 : 2 }]);
  });
});

describe("bad dedupe options", () => {
  const cases: [string, () => Promise<unknown>, RegExp][] = [
    ["an unknown mode", () => enqueue({}, "queue" as DedupeMode), /^dedupe: must be "retained", "active", "queued", "replace" or \{ ttlMs \} \(got "queue"\) — did you mean 'queued'\?/],
    ["a ttl of zero", () => enqueue({}, { ttlMs: 0 }), /^dedupe\.ttlMs: must be a number of milliseconds > 0 .*\(got 0\)/],
    ["a negative ttl", () => enqueue({}, { ttlMs: -5 }), /^dedupe\.ttlMs: .*\(got -5\)/],
    ["a ttl that is not a number", () => enqueue({}, { ttlMs: "60s" } as unknown as DedupeMode), /^dedupe\.ttlMs: .*\(got "60s"\)/],
    ["a ttl of NaN", () => enqueue({}, { ttlMs: Number.NaN }), /^dedupe\.ttlMs: .*\(got NaN\)/],
    ["a ttl past 100 years", () => enqueue({}, { ttlMs: 1e13 }), /^dedupe\.ttlMs: .*at most/],
    ["a misspelt ttl option", () => enqueue({}, { ttl: 5 } as unknown as DedupeMode), /^dedupe\.ttl: unknown option — did you mean 'ttlMs'\?/],
    ["a mode that is not a string or object", () => enqueue({}, 3 as unknown as DedupeMode), /^dedupe: must be .*\(got 3\)/],
    ["a mode without a key", () => t.errand.enqueue("task", {}, { dedupe: "queued" }), /^dedupe: needs a dedupeKey/],
    [
      "a bad mode in a batch, after a good job",
      () => t.errand.enqueueMany([{ kind: "task", payload: {} }, { kind: "task", payload: {}, dedupeKey: "k", dedupe: "debounce" as DedupeMode }]),
      /^jobs\[1\]\.dedupe: must be .*\(got "debounce"\)/,
    ],
  ];
  it.each(cases)("refuses %s, naming the field, and writes nothing", async (_, call, message) => {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(message);
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 0 }]);
  });
});
