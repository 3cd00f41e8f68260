import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ErrandError, PermanentError, isolated, type IsolatedHandler, type IsolationMode, type JobContext, type Json } from "../../src/index.js";
import { startMetricsServer } from "../../src/metrics.js";
import { isSnooze } from "../../src/outcomes.js";
import { type TestErrand, eventually, expireLeases, testErrand } from "../support/db.js";
import { root } from "../support/process.js";

// Isolated handlers run in threads and child processes, which load JavaScript only: the
// fixture imports errand's compiled errors and outcomes.
const fixture = new URL("../fixtures/isolated-handlers.js", import.meta.url);
const modes: IsolationMode[] = ["thread", "process"];

let dir: string;
beforeAll(() => {
  if (!existsSync(join(root, "dist", "errors.js"))) throw new Error("dist/ is missing: run `npm run build` before test/worker/isolation.test.ts");
  dir = mkdtempSync(join(tmpdir(), "errand-isolation-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function context(signal = new AbortController().signal): JobContext {
  return { id: "7", kind: "k", attempt: 2, maxAttempts: 5, idempotencyKey: "errand-job-7", createdAt: new Date("2026-01-02T03:04:05Z"), signal,
    lastCheckpoint: undefined, checkpoint: () => Promise.reject(new Error("unused")), complete: () => Promise.reject(new Error("unused")), progress: () => {} };
}

/** What the handler threw. */
async function thrownBy(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** True while a process with this pid exists (a reaped child does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.each(modes)("isolated(…, { mode: %s })", (mode) => {
  const run = (exportName: string, payload: Json = {}, signal?: AbortSignal) => isolated(fixture, { mode, export: exportName })(payload, context(signal));

  it("returns the handler's result, given the payload and the job's context", async () => {
    const result = (await run("default", { order: 1042, tags: ["a"] })) as Record<string, unknown>;
    expect(result).toMatchObject({
      payload: { order: 1042, tags: ["a"] },
      context: { id: "7", kind: "k", attempt: 2, maxAttempts: 5, idempotencyKey: "errand-job-7", createdAt: new Date("2026-01-02T03:04:05Z") },
      createdAtIsDate: true,
      functions: ["checkpoint", "complete", "progress"],
    });
    const [pid, thread] = String(result.where).split("/").map(Number);
    if (mode === "process") expect(pid).not.toBe(process.pid);
    else expect([pid, thread]).not.toEqual([process.pid, 0]);
    expect(await run("returnsFunction")).toBeUndefined(); // not cloneable: dropped, the job still succeeds
  });

  it("carries thrown errors across: name, message, stack, code and cause; PermanentError stays permanent", async () => {
    const failed = (await thrownBy(run("fails"))) as Error & { code?: string };
    expect(failed).toBeInstanceOf(Error);
    expect(failed).not.toBeInstanceOf(PermanentError);
    expect([failed.name, failed.message, failed.code]).toEqual(["RangeError", "the fixture failed", "fixture_code"]);
    expect(failed.stack).toContain("isolated-handlers.js");
    expect((failed.cause as Error).message).toBe("the root cause");

    const dead = await thrownBy(run("failsPermanently"));
    expect(dead).toBeInstanceOf(PermanentError);
    expect((dead as PermanentError).message).toBe("not an email address");
    const wrapped = (await thrownBy(run("wrappedPermanently"))) as PermanentError;
    expect(wrapped).toBeInstanceOf(PermanentError);
    expect(wrapped.stack).toMatch(/^TypeError: no such customer/);

    expect(await thrownBy(run("throwsValue"))).toEqual({ status: 418 });
    expect(((await thrownBy(run("throwsLater"))) as Error).message).toBe("thrown from a timer");
    expect(((await thrownBy(run("notAFunction"))) as Error).message).toMatch(/has no function exported as 'notAFunction' \(function exports: .*spin/);
  });

  it("returns snooze() as a snooze", async () => {
    const result = await run("snoozes", { ms: 60_000 });
    expect(isSnooze(result)).toBe(true);
    expect((result as { delayMs: number }).delayMs).toBe(60_000);
  });

  it("fails the attempt with the exit code when the handler's thread or process exits", async () => {
    const exited = (await thrownBy(run("exits", { code: 3 }))) as ErrandError;
    expect(exited).toBeInstanceOf(ErrandError);
    expect(exited.code).toBe("isolate_exited");
    expect(exited.message).toMatch(new RegExp(`^the ${mode} running file://.*isolated-handlers\\.js \\(export 'exits'\\) .*exited with code 3 before the handler finished$`));
    if (mode === "process") {
      const killed = (await thrownBy(run("killsItself"))) as ErrandError;
      expect(killed.message).toMatch(/\(pid \d+\) was killed by SIGKILL before the handler finished$/);
    }
  });

  it("starts a fresh one per job by default, or reuses up to `idle` of them, never after an uncaught error", async () => {
    const where = async (handler: IsolatedHandler) => ((await handler({}, context())) as { where: string }).where;
    const fresh = isolated(fixture, { mode });
    expect(await where(fresh)).not.toBe(await where(fresh));
    await eventually(() => fresh.running === 0, 5_000, "the fresh isolates to exit");

    const reused = isolated(fixture, { mode, idle: 1 });
    const first = await where(reused);
    expect(await where(reused)).toBe(first);
    expect(reused.running).toBe(1);
    const fails = isolated(fixture, { mode, idle: 1, export: "fails" });
    const throwsLater = isolated(fixture, { mode, idle: 1, export: "throwsLater" });
    await thrownBy(fails({}, context()));
    expect(fails.running).toBe(1); // a thrown error leaves it usable
    await thrownBy(throwsLater({}, context()));
    await eventually(() => throwsLater.running === 0, 5_000, "the isolate with an uncaught error to be ended");
    await Promise.all([reused.close(), fails.close()]);
    expect([reused.running, fails.running]).toEqual([0, 0]);
  });

  it("terminates a handler that blocks its event loop when the signal aborts, and rejects with the reason", async () => {
    const handler = isolated(fixture, { mode, export: "spin", idle: 1 });
    const pidFile = join(dir, `abort-${mode}`);
    const controller = new AbortController();
    const attempt = thrownBy(handler({ pidFile }, context(controller.signal)));
    const pid = Number(await eventually(() => existsSync(pidFile) && readFileSync(pidFile, "utf8"), 10_000, "the handler to start"));
    expect(handler.running).toBe(1);
    const reason = new ErrandError("lease_lost", "gone");
    controller.abort(reason);
    expect(await attempt).toBe(reason);
    expect(handler.running).toBe(0); // the rejection waits for the exit; a terminated one is not kept
    if (mode === "process") await eventually(() => !alive(pid), 5_000, `pid ${pid} to be gone`);
  });
});

describe("isolated() arguments", () => {
  it("rejects a relative path, a missing file and an unknown mode, naming the field", () => {
    expect(() => isolated("./resize.js")).toThrow(/^module: must be a file URL or an absolute path/);
    expect(() => isolated(new URL("./no-such-file.js", import.meta.url))).toThrow(/^module: no such file: .*no-such-file\.js$/);
    expect(() => isolated(fixture, { mode: "fiber" as IsolationMode })).toThrow(/^mode: must be "thread" or "process"/);
    expect(() => isolated(fixture, { idle: -1 })).toThrow(/^idle: must be an integer ≥ 0/);
  });

  it("works from the compiled package, which ships its entry script in dist/", async () => {
    const compiled = (await import(pathToFileURL(join(root, "dist", "index.js")).href)) as { isolated: typeof isolated };
    const result = await compiled.isolated(fixture, { mode: "thread" })({ from: "dist" }, context());
    expect(result).toMatchObject({ payload: { from: "dist" } });
    expect(existsSync(join(root, "dist", "worker", "isolated-entry.js"))).toBe(true);
  });

  it("does not start anything for a job whose signal has already aborted", async () => {
    const handler = isolated(fixture, { export: "spin" });
    const controller = new AbortController();
    controller.abort(new Error("too late"));
    expect(((await thrownBy(handler({ pidFile: join(dir, "never") }, context(controller.signal)))) as Error).message).toBe("too late");
    expect(handler.running).toBe(0);
    expect(existsSync(join(dir, "never"))).toBe(false);
  });
});

describe.each(modes)("a worker with an isolated kind that blocks forever (%s)", (mode) => {
  let t: TestErrand;
  afterEach(() => t.cleanup());

  it("keeps running other jobs; lease loss and shutdown terminate the handler, and the database shows retry policy", async () => {
    t = await testErrand();
    const spin = isolated(fixture, { mode, export: "spin" });
    const worker = t.errand.worker({ handlers: { spin, quick: async () => {} }, concurrency: 4, heartbeatIntervalMs: 50, pollIntervalMs: 50 });
    const pidFile = (name: string) => join(dir, `${mode}-${t.schema}-${name}`);
    const lost = await t.errand.enqueue("spin", { pidFile: pidFile("lost") }, { maxAttempts: 1 });
    const kept = await t.errand.enqueue("spin", { pidFile: pidFile("kept") }, { maxAttempts: 3 });
    await t.errand.enqueueMany(Array.from({ length: 40 }, (_, i) => ({ kind: "quick", payload: { i } })));
    const count = async (status: string, kind: string) =>
      Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.all_jobs WHERE status = $1 AND kind = $2`, [status, kind]))[0]!.n);
    await worker.start();
    try {
      await eventually(async () => (await count("done", "quick")) === 40, 20_000, "the ordinary jobs to finish beside the spinning ones");
      expect(spin.running).toBe(2);
      const pid = (name: string) => Number(readFileSync(pidFile(name), "utf8"));
      await eventually(() => existsSync(pidFile("lost")) && existsSync(pidFile("kept")), 10_000, "both spinning handlers to start");

      // Another worker's rescuer takes the first job (its lease ran out): the heartbeat
      // finds it gone and terminates the handler; one attempt allowed, so it is dead.
      await t.sql(`UPDATE ${t.schema}.jobs SET locked_by = 'stalled' WHERE id = $1`, [lost.id]);
      await expireLeases(t, [lost.id], "1 second");
      expect(await worker.rescue()).toEqual({ ready: 0, dead: 1 });
      await eventually(() => spin.running === 1, 10_000, "the lost job's handler to be terminated");
      if (mode === "process") await eventually(() => !alive(pid("lost")), 5_000, "the lost job's process to be gone");

      // Shutdown's deadline terminates the other one and gives its attempt back.
      await worker.stop({ timeout: 50 });
      await eventually(() => spin.running === 0, 10_000, "the last handler to be terminated");
      if (mode === "process") await eventually(() => !alive(pid("kept")), 5_000, "the kept job's process to be gone");
    } finally {
      await worker.stop({ timeout: 0 });
    }
    const rows = await t.sql<{ id: string; status: string; attempts: number; last_error: string | null }>(
      `SELECT id::text, status, attempts, last_error FROM ${t.schema}.all_jobs WHERE kind = 'spin' ORDER BY id`,
    );
    expect(rows).toMatchObject([
      { id: lost.id, status: "dead", attempts: 1, last_error: expect.stringMatching(/lease expired on attempt 1 of 1/) },
      { id: kept.id, status: "ready", attempts: 0, last_error: null },
    ]);
  });
});

describe("GET /healthz", () => {
  let t: TestErrand;
  afterEach(() => t.cleanup());

  it("answers 200 while the loop and the worker run, 503 after the loop was blocked and once the worker stopped", async () => {
    t = await testErrand();
    const server = await startMetricsServer({ port: 0, host: "127.0.0.1", health: { maxEventLoopLagMs: 300, windowMs: 1_000 } });
    const probe = async () => {
      const response = await fetch(`http://127.0.0.1:${server.port}/healthz`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const worker = t.errand.worker({ handlers: {}, onEvent: server.onEvent });
    try {
      await worker.start();
      const healthy = await eventually(async () => {
        const answer = await probe();
        return answer.status === 200 ? answer : undefined;
      }, 15_000, "a 200 from /healthz");
      expect(healthy!.body).toMatchObject({ status: "ok", maxEventLoopLagMs: 300, workers: { running: 1, stopped: 0 } });

      // Block this process's event loop as a spinning handler would; the probe is
      // answered once it is free again, and reports the stall.
      const answer = probe();
      const until = performance.now() + 700;
      while (performance.now() < until);
      const blocked = await answer;
      expect(blocked.status).toBe(503);
      expect(blocked.body).toMatchObject({ status: "unhealthy", reason: expect.stringMatching(/^the event loop was blocked for \d+ ms \(limit 300 ms\)$/) });
      expect(blocked.body.eventLoopLagMs).toBeGreaterThan(300);

      // The stall leaves the window: healthy again.
      await eventually(async () => (await probe()).status === 200, 15_000, "/healthz to recover");

      await worker.stop();
      const stopped = await probe();
      expect(stopped).toMatchObject({ status: 503, body: { status: "unhealthy", reason: "the worker has stopped", workers: { running: 0, stopped: 1 } } });
    } finally {
      await worker.stop();
      await server.close();
    }
  });
});
