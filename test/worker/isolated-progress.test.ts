import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolated, type IsolationMode } from "../../src/index.js";
import { eventually, useTestErrand } from "../support/db.js";
import { root } from "../support/process.js";

// ctx.progress, ctx.checkpoint and ctx.lastCheckpoint in isolated handlers, through a real
// worker on both databases; ctx.complete is refused there, clearly.
const fixture = new URL("../fixtures/isolated-progress-handlers.js", import.meta.url);
const modes: IsolationMode[] = ["thread", "process"];
const t = useTestErrand();

let dir: string;
beforeAll(() => {
  if (!existsSync(join(root, "dist", "worker", "isolated-json.js"))) throw new Error("dist/ is missing: run `npm run build` before test/worker/isolated-progress.test.ts");
  dir = mkdtempSync(join(tmpdir(), "errand-isolated-progress-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const row = async (id: string) =>
  (await t.sql<{ status: string; checkpoint: unknown; progress: unknown; result: unknown; attempts: number; last_error: string | null }>(
    `SELECT status, checkpoint, progress, result, attempts, last_error FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!;

describe.each(modes)("an isolated handler (%s)", (mode) => {
  const handler = (name: string) => isolated(fixture, { mode, export: name });

  it("saves checkpoints and reports progress; the next attempt resumes from the last checkpoint", async () => {
    const { id } = await t.errand.enqueue("import", { items: 5, crashAfter: 3 }, { maxAttempts: 3 });
    const worker = t.errand.worker({ handlers: { import: handler("resumes") } });
    expect(await worker.runOnce()).toBe(1);
    const crashed = await row(id);
    expect(crashed).toMatchObject({ status: "ready", attempts: 1, checkpoint: { next: 3 } });
    expect(crashed.last_error).toContain("crashed after step 3");
    await t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() WHERE id = $1`, [id]); // skip the backoff
    expect(await worker.runOnce()).toBe(1);
    expect(await row(id)).toMatchObject({
      status: "done",
      attempts: 2,
      result: { resumedFrom: 3, lastCheckpoint: { next: 3 }, attempt: 2 },
      checkpoint: { next: 5 },
      progress: { done: 5, of: 5 }, // the last report, written with the completion
    });
    await worker.stop();
  });

  it("refuses bad progress and checkpoints as the in-process ctx does, and ctx.complete(tx) with a clear error", async () => {
    const { id } = await t.errand.enqueue("misuse", {});
    const worker = t.errand.worker({ handlers: { misuse: handler("misuses") } });
    expect(await worker.runOnce()).toBe(1);
    const job = await row(id);
    expect(job.status).toBe("done");
    expect(job.result).toMatchObject({
      progressDate: { name: "ValidationError", code: "invalid_argument", field: "progress.at", message: expect.stringMatching(/^progress\.at: is a Date; it must be plain JSON/) },
      progressTooBig: { name: "ValidationError", code: "invalid_argument", field: "progress", message: expect.stringMatching(/^progress: is 5002 bytes of JSON, over the limit of 4096/) },
      checkpointFunction: { name: "ValidationError", code: "invalid_argument", field: "checkpoint.f", message: "checkpoint.f: is a function, which is not JSON" },
      // Judged by the worker, across the boundary: still a ValidationError naming the field.
      checkpointTooBig: { name: "ValidationError", code: "invalid_argument", field: "checkpoint", message: expect.stringMatching(/^checkpoint: is \d+ bytes of JSON, over the limit of 65536/) },
      complete: { name: "ErrandError", code: "unsupported", message: expect.stringMatching(/ctx\.complete\(tx\) does not work in an isolated handler/) },
      checkpointFine: "no error",
    });
    expect(job.checkpoint).toEqual({ kept: true });
    expect(job.progress).toBeNull(); // no report passed
    await worker.stop();
  });

  it("coalesces a tight loop of reports; the job keeps the last one", async () => {
    const { id } = await t.errand.enqueue("loop", { n: 20_000 });
    const worker = t.errand.worker({ handlers: { loop: handler("tightLoop") } });
    expect(await worker.runOnce()).toBe(1);
    expect(await row(id)).toMatchObject({ status: "done", progress: 20_000 });
    await worker.stop();
  });

  it("shows progress while the handler runs, as getJob reads it", async () => {
    const file = join(dir, `go-${mode}`);
    const { id } = await t.errand.enqueue("stages", { file });
    const worker = t.errand.worker({ handlers: { stages: handler("stages") }, progressIntervalMs: 50 });
    await worker.start();
    try {
      await eventually(async () => JSON.stringify((await t.errand.getJob(id))?.progress) === '{"stage":"downloading"}', 15_000, "the first stage to show");
      expect((await t.errand.getJob(id))?.status).toBe("running");
      writeFileSync(file, "go");
      const done = await t.errand.waitFor(id, { timeoutMs: 15_000 });
      expect(done).toMatchObject({ status: "done", result: "ok", progress: { stage: "finishing" } });
    } finally {
      await worker.stop();
    }
  });
});
