import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { type Errand, snooze } from "../../src/index.js";
import { advance, drain, enqueued, openTestErrand } from "../../src/testing/index.js";
import { testErrand } from "../support/db.js";

// The helpers open their own in-memory PGlite, so most of this file is the same in both
// projects; the `db` test below runs on the project's own database (PGlite or PostgreSQL).

const root = fileURLToPath(new URL("../../", import.meta.url));
const hour = 60 * 60_000;
const opened: Errand[] = [];

async function open(options?: Parameters<typeof openTestErrand>[0]): Promise<Errand> {
  const errand = await openTestErrand(options);
  opened.push(errand);
  return errand;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((errand) => errand.close()));
});

describe("errand/testing", () => {
  it("drain runs the due jobs and the jobs their handlers enqueue, and leaves jobs not yet due", async () => {
    const errand = await open();
    await errand.enqueue("place_order", { orderId: 1042 });
    await errand.enqueue("send_reminder", { orderId: 1042 }, { delay: hour });
    const result = await drain(errand, {
      place_order: async ({ orderId }: { orderId: number }) => {
        await errand.enqueue("send_receipt", { orderId });
      },
      send_receipt: async () => {},
    });
    expect(result).toMatchObject({ done: 2, failed: 0, dead: 0, snoozed: 0 });
    expect(result.jobs.map((job) => [job.kind, job.outcome, job.attempt, job.payload])).toEqual([
      ["place_order", "done", 1, { orderId: 1042 }],
      ["send_receipt", "done", 1, { orderId: 1042 }],
    ]);
    expect((await enqueued(errand, { status: "done" })).map((job) => job.kind)).toEqual(["place_order", "send_receipt"]);
    expect((await enqueued(errand, { status: "ready" })).map((job) => job.kind)).toEqual(["send_reminder"]);
    // Nothing is due any more: a second drain runs nothing.
    expect((await drain(errand, {})).jobs).toEqual([]);
  });

  it("a thrown error is a failure that is not retried within the same drain", async () => {
    const errand = await open();
    const { id } = await errand.enqueue("send_receipt", { orderId: 7 });
    let calls = 0;
    const result = await drain(errand, {
      send_receipt: async () => {
        calls++;
        throw new Error("SMTP unavailable");
      },
    });
    expect(calls).toBe(1);
    expect(result).toMatchObject({ done: 0, failed: 1, dead: 0, snoozed: 0 });
    expect(result.jobs[0]).toMatchObject({ id, outcome: "failed", attempt: 1 });
    expect(result.jobs[0]!.error).toMatch(/SMTP unavailable/);
    const job = (await errand.getJob(id))!;
    expect(job).toMatchObject({ status: "ready", attempts: 1 });
    expect(job.lastError).toMatch(/SMTP unavailable/);
    expect(job.runAt.getTime()).toBeGreaterThan(Date.now() + 10_000); // default backoff: ≥ 15 s
  });

  it("advance and drain walk a failing job through all 8 attempts to dead, with last_error set", async () => {
    const errand = await open();
    const { id } = await errand.enqueue("send_receipt", { orderId: 7 });
    const handlers = {
      send_receipt: async (_payload: unknown, ctx: { attempt: number }) => {
        throw new Error(`SMTP unavailable (attempt ${ctx.attempt})`);
      },
    };
    const outcomes: string[] = [];
    for (let attempt = 1; attempt <= 8; attempt++) {
      if (attempt > 1) expect(await advance(errand, hour)).toBe(1);
      const result = await drain(errand, handlers);
      expect(result.jobs.map((job) => job.attempt)).toEqual([attempt]);
      outcomes.push(result.jobs[0]!.outcome);
    }
    expect(outcomes).toEqual([...Array<string>(7).fill("failed"), "dead"]);
    const job = (await errand.getJob(id))!;
    expect(job).toMatchObject({ status: "dead", attempts: 8, maxAttempts: 8 });
    expect(job.lastError).toMatch(/SMTP unavailable \(attempt 8\)/);
    expect(job.errors).toHaveLength(8);
    // Dead jobs are not moved by advance, and no further drain runs them.
    expect(await advance(errand, hour)).toBe(0);
    expect((await drain(errand, handlers)).jobs).toEqual([]);
  });

  it("advance makes delays, runAt and snoozes due, and leaves due jobs alone", async () => {
    const errand = await open();
    let limited = true; // a snooze does not spend an attempt, so count runs here
    const handlers = {
      later: async () => {},
      tomorrow: async () => {},
      rate_limited: async () => {
        if (!limited) return undefined;
        limited = false;
        return snooze(30 * 60_000);
      },
    };
    await errand.enqueue("later", {}, { delay: 10 * 60_000 });
    await errand.enqueue("tomorrow", {}, { runAt: new Date(Date.now() + 24 * hour) });
    await errand.enqueue("rate_limited", {});
    const first = await drain(errand, handlers);
    expect(first).toMatchObject({ done: 0, snoozed: 1 });
    expect(first.jobs.map((job) => job.kind)).toEqual(["rate_limited"]);

    expect(await advance(errand, 10 * 60_000)).toBe(3); // every job still waiting moved
    expect((await drain(errand, handlers)).jobs.map((job) => job.kind)).toEqual(["later"]);
    expect(await advance(errand, 20 * 60_000)).toBe(2);
    expect((await drain(errand, handlers)).jobs.map((job) => [job.kind, job.outcome])).toEqual([["rate_limited", "done"]]);
    expect(await advance(errand, 24 * hour)).toBe(1);
    expect((await drain(errand, handlers)).jobs.map((job) => job.kind)).toEqual(["tomorrow"]);
    await expect(advance(errand, -1)).rejects.toThrow(/ms: must be a number of milliseconds ≥ 0/);
  });

  it("enqueued filters by kind, status and payload", async () => {
    const errand = await open();
    await errand.enqueue("send_receipt", { orderId: 1, total: 100 });
    await errand.enqueue("send_receipt", { orderId: 2, total: 200 });
    await errand.enqueue("ship_order", { orderId: 1 });
    await drain(errand, { ship_order: async () => {}, send_receipt: async ({ orderId }: { orderId: number }) => {
      if (orderId === 2) throw new Error("no address");
    } });

    expect(await enqueued(errand)).toHaveLength(3);
    expect((await enqueued(errand, { kind: "send_receipt" })).map((job) => job.payload)).toEqual([
      { orderId: 1, total: 100 },
      { orderId: 2, total: 200 },
    ]);
    expect((await enqueued(errand, { status: "done" })).map((job) => job.kind)).toEqual(["send_receipt", "ship_order"]);
    expect((await enqueued(errand, { kind: "send_receipt", status: "ready" })).map((job) => job.payload)).toEqual([{ orderId: 2, total: 200 }]);
    expect(await enqueued(errand, { status: ["dead", "running"] })).toEqual([]);
    expect((await enqueued(errand, { payload: { orderId: 1 } })).map((job) => job.kind)).toEqual(["send_receipt", "ship_order"]);
    expect(await enqueued(errand, { kind: "send_receipt", payload: { orderId: 3 } })).toEqual([]);
    await expect(enqueued(errand, { status: "failed" as "dead" })).rejects.toThrow(/status: must be one of ready, running, done, dead/);
  });

  it("drain stops with a clear error when jobs are still due after maxJobs", async () => {
    const errand = await open();
    await errand.enqueue("forever", {});
    let runs = 0;
    const forever = {
      forever: async () => {
        runs++;
        await errand.enqueue("forever", {});
      },
    };
    const error = await drain(errand, forever, { maxJobs: 5 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "drain_limit" });
    expect((error as Error).message).toMatch(/drain ran 5 jobs \(maxJobs 5\) and jobs are still due/);
    expect(runs).toBe(5);

    // Exactly maxJobs jobs and then an empty queue is not an error.
    const other = await open();
    await other.enqueueMany([1, 2, 3].map((n) => ({ kind: "once", payload: { n } })));
    expect((await drain(other, { once: async () => {} }, { maxJobs: 3 })).done).toBe(3);
    await expect(drain(other, {}, { maxJobs: 0 })).rejects.toThrow(/maxJobs: must be a positive integer/);
  });

  it("openTestErrand passes kinds through, rejects unknown options, and close() closes its database", async () => {
    const errand = await openTestErrand({ kinds: { send_receipt: { maxAttempts: 2 } } });
    const { id } = await errand.enqueue("send_receipt", {});
    expect((await errand.getJob(id))!.maxAttempts).toBe(2);
    await errand.close();
    await expect(errand.getJob(id)).rejects.toThrow();
    await expect(openTestErrand({ kind: {} } as never)).rejects.toThrow(/kind: unknown option — did you mean 'kinds'\?/);
    await expect(openTestErrand({ maxPayloadBytes: 0 })).rejects.toThrow(/maxPayloadBytes: must be a positive integer/);
  });

  it("openTestErrand({ db }) works in a throwaway schema on the given database and drops it on close", async () => {
    const shared = await testErrand();
    try {
      const errand = await openTestErrand({ db: shared.db });
      expect(errand.schema).toMatch(/^errand_test_[0-9a-f]{12}$/);
      await errand.enqueue("ping", {});
      expect((await drain(errand, { ping: async () => {} })).done).toBe(1);
      const exists = () => shared.sql("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [errand.schema]);
      expect(await exists()).toHaveLength(1);
      await errand.close();
      expect(await exists()).toEqual([]);
      // The caller's database is still open.
      expect(await shared.sql("SELECT 1 AS one")).toEqual([{ one: 1 }]);
    } finally {
      await shared.cleanup();
    }
  });
});

describe("the errand/testing package entry", () => {
  const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { name: string; exports: Record<string, unknown> };

  it("package.json exports ./testing, pointing at built files (run `npm run build` first)", () => {
    expect(pkg.name).toBe("errand");
    expect(pkg.exports["./testing"]).toEqual({ types: "./dist/testing/index.d.ts", default: "./dist/testing/index.js" });
    expect(existsSync(`${root}dist/testing/index.js`)).toBe(true);
    expect(existsSync(`${root}dist/testing/index.d.ts`)).toBe(true);
  });

  it("the README's example imports errand/testing as a user would, and its tests pass", async () => {
    const readme = readFileSync(`${root}README.md`, "utf8");
    const example = readme.split("\n## Testing your handlers\n")[1]?.split("```js\n")[1]?.split("```")[0];
    expect(example).toContain('from "errand/testing"');
    // Node resolves "errand/testing" through package.json's exports (a package may import
    // itself by name), exactly as in a user's project.
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", example!], { cwd: root });
    expect(stdout).toMatch(/^# pass 2$/m);
    expect(stdout).toMatch(/^# fail 0$/m);
  });
});
