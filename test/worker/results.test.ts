import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { ErrandError, NotFoundError, ValidationError, type Job } from "../../src/index.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

/** Every notice on the schema's wait channel, in order, until `stop()`. */
async function notices(): Promise<{ seen: string[]; stop: () => Promise<void> }> {
  const seen: string[] = [];
  const stop = await t.errand.driver.listen(`errand_wait_${t.schema}`, (payload) => seen.push(payload ?? "(none)"));
  return { seen, stop };
}

describe("results", () => {
  it("stores what a handler returns with the job; nothing returned stores null", async () => {
    const [a, b, c, d] = await t.errand.enqueueMany([
      { kind: "sum", payload: [1, 2, 3] },
      { kind: "quiet", payload: {} },
      { kind: "text", payload: {} },
      { kind: "nothing", payload: {} },
    ]);
    const worker = t.errand.worker({
      handlers: {
        sum: (xs: number[]) => ({ total: xs.reduce((x, y) => x + y, 0) }),
        quiet: async () => {},
        text: () => "12",
        nothing: () => null,
      },
    });
    expect(await worker.runOnce()).toBe(4);
    expect(await t.errand.getJob(a!.id)).toMatchObject({ status: "done", result: { total: 6 }, progress: null });
    expect((await t.errand.getJob(b!.id))?.result).toBeNull();
    // A string result stays a string (it is not parsed as JSON text a second time).
    expect((await t.errand.getJob(c!.id))?.result).toBe("12");
    expect((await t.errand.getJob(d!.id))?.result).toBeNull();
  });

  it("a result over maxResultBytes or not JSON fails the attempt, naming the result, and writes none of it", async () => {
    const [big, dated, cyclic, fine] = await t.errand.enqueueMany([
      { kind: "big", payload: {} },
      { kind: "dated", payload: {} },
      { kind: "cyclic", payload: {} },
      { kind: "fine", payload: {} },
    ]);
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    const worker = t.errand.worker({
      maxResultBytes: 100,
      handlers: { big: () => "x".repeat(200), dated: () => ({ at: new Date(0) }), cyclic: () => loop, fine: () => ({ ok: true }) },
    });
    expect(await worker.runOnce()).toBe(4);
    const bigJob = await t.errand.getJob(big!.id);
    expect(bigJob).toMatchObject({ status: "ready", attempts: 1, result: null });
    expect(bigJob?.lastError).toMatch(/^ValidationError: result: is 202 bytes of JSON, over the limit of 100; return a summary/);
    expect((await t.errand.getJob(dated!.id))?.lastError).toMatch(/^ValidationError: result\.at: is a Date; it must be plain JSON/);
    expect((await t.errand.getJob(cyclic!.id))?.lastError).toMatch(/^ValidationError: result\.self: is a circular reference/);
    // One bad result affects only its own job.
    expect(await t.errand.getJob(fine!.id)).toMatchObject({ status: "done", result: { ok: true } });
  });

  it("the worker refuses a maxResultBytes that is not a positive integer", () => {
    expect(() => t.errand.worker({ maxResultBytes: 0, handlers: {} })).toThrow(ValidationError);
    expect(() => t.errand.worker({ progressIntervalMs: -1, handlers: {} })).toThrow(/progressIntervalMs/);
  });
});

describe("waitFor", () => {
  it("resolves with the finished job once a running worker completes it", async () => {
    const { id } = await t.errand.enqueue("slow", { n: 2 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = t.errand.worker({ handlers: { slow: async ({ n }: { n: number }) => (await gate, n * 21) } });
    await worker.start();
    try {
      const waiting = t.errand.waitFor(id, { timeoutMs: 20_000 });
      await eventually(async () => (await t.errand.getJob(id))?.status === "running", 10_000, "the job to start");
      release();
      const job = await waiting;
      expect(job).toMatchObject({ id, status: "done", result: 42 });
    } finally {
      await worker.stop();
    }
  });

  it("resolves at once for a job that has finished, done or dead", async () => {
    const [ok, bad] = await t.errand.enqueueMany([{ kind: "ok", payload: {} }, { kind: "bad", payload: {}, maxAttempts: 1 }]);
    await t.errand.worker({ handlers: { ok: () => "yes", bad: () => { throw new Error("no"); } } }).runOnce();
    expect(await t.errand.waitFor(ok!.id)).toMatchObject({ status: "done", result: "yes" });
    expect(await t.errand.waitFor(bad!.id)).toMatchObject({ status: "dead", result: null });
  });

  it("sends one notice per completion statement, naming every finished job, and none for a retry", async () => {
    const specs = Array.from({ length: 30 }, (_, i) => ({ kind: "k", payload: i }));
    const jobs = await t.errand.enqueueMany([...specs, { kind: "flaky", payload: 0 }]);
    const { seen, stop } = await notices();
    try {
      await t.errand.worker({ concurrency: 40, handlers: { k: () => {}, flaky: () => { throw new Error("later"); } } }).runOnce();
      const expected = `f:${jobs.slice(0, 30).map((j) => j.id).join(",")}`;
      await eventually(() => seen.length >= 1, 5_000, "a notice");
      // The notice's ids are in the order the statement met them; compare as sets.
      expect(seen).toHaveLength(1);
      expect(new Set(seen[0]!.slice(2).split(","))).toEqual(new Set(expected.slice(2).split(",")));
    } finally {
      await stop();
    }
  });

  it("rejects for an unknown id, after timeoutMs, when the signal aborts, and when the errand closes", async () => {
    await expect(t.errand.waitFor("999999")).rejects.toBeInstanceOf(NotFoundError);
    const { id } = await t.errand.enqueue("never", {});
    await expect(t.errand.waitFor(id, { timeoutMs: 50 })).rejects.toMatchObject({ code: "wait_timeout" });
    const controller = new AbortController();
    const aborted = t.errand.waitFor(id, { signal: controller.signal });
    controller.abort(new Error("user went away"));
    await expect(aborted).rejects.toThrow("user went away");
    await expect(t.errand.waitFor(id, { timeoutMs: -1 })).rejects.toThrow(ValidationError);
    const pending = t.errand.waitFor(id);
    await t.errand.close();
    await expect(pending).rejects.toMatchObject({ code: "closed" });
    await expect(pending).rejects.toBeInstanceOf(ErrandError);
  });
});

describe("progress", () => {
  it("is written in the background, coalesced, the last value with the completion, and fed to onProgress in order", async () => {
    const { id } = await t.errand.enqueue("count", { to: 2000 });
    let step!: () => void;
    const stepped = new Promise<void>((resolve) => (step = resolve));
    const worker = t.errand.worker({
      progressIntervalMs: 100,
      handlers: {
        count: async ({ to }: { to: number }, ctx) => {
          // A tight loop: the worker must not write each of these.
          for (let i = 1; i <= to / 2; i++) ctx.progress({ done: i, of: to });
          await stepped;
          for (let i = to / 2 + 1; i <= to; i++) ctx.progress({ done: i, of: to });
          return "counted";
        },
      },
    });
    const { seen, stop } = await notices();
    const reported: unknown[] = [];
    await worker.start();
    try {
      const waiting = t.errand.waitFor(id, { onProgress: (progress) => reported.push(progress) });
      // Visible in getJob while the job runs.
      await eventually(async () => isDeepStrictEqual((await t.errand.getJob(id))?.progress, { done: 1000, of: 2000 }), 10_000, "the first half's progress");
      // And to the waiter, before the handler goes on: a value it reads only after the job
      // finished is one it may skip (see WaitOptions.onProgress).
      await eventually(async () => reported.some((p) => isDeepStrictEqual(p, { done: 1000, of: 2000 })), 10_000, "onProgress to see the first half");
      step();
      const job: Job = await waiting;
      // The last report, made just before returning, went with the completion.
      expect(job).toMatchObject({ status: "done", result: "counted", progress: { done: 2000, of: 2000 } });
      expect(reported.at(-1)).toEqual({ done: 2000, of: 2000 });
      expect(reported).toContainEqual({ done: 1000, of: 2000 });
      const dones = reported.map((p) => (p as { done: number }).done);
      expect(dones).toEqual([...dones].sort((x, y) => x - y));
      expect(new Set(dones).size).toBe(dones.length);
      // 2,000 reports, a handful of progress writes.
      expect(seen.filter((s) => s.startsWith("p:")).length).toBeLessThanOrEqual(3);
    } finally {
      step();
      await stop();
      await worker.stop();
    }
  });

  it("refuses a value that is not JSON or over 4 KiB, naming progress, and the job can go on", async () => {
    const { id } = await t.errand.enqueue("p", {});
    const errors: unknown[] = [];
    const worker = t.errand.worker({
      handlers: {
        p: (_: unknown, ctx) => {
          for (const bad of [undefined, new Map(), "x".repeat(5000)]) {
            try {
              ctx.progress(bad as never);
            } catch (error) {
              errors.push(error);
            }
          }
          ctx.progress(0.5);
        },
      },
    });
    await worker.runOnce();
    expect(errors).toHaveLength(3);
    for (const error of errors) expect(error).toBeInstanceOf(ValidationError);
    expect((errors[0] as Error).message).toMatch(/^progress: is undefined/);
    expect((errors[2] as Error).message).toMatch(/^progress: is 5002 bytes of JSON, over the limit of 4096/);
    expect(await t.errand.getJob(id)).toMatchObject({ status: "done", progress: 0.5, result: null });
  });
});
