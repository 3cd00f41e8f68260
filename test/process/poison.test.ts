import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import type { Exit, Spawned } from "../support/process.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const ARGS = ["--lease", "1", "--rescue-interval", "0.2", "--poll-interval", "0.2"];

/**
 * Runs a worker like a process supervisor would (systemd, Kubernetes): whenever it dies,
 * start another, until `done()` says so. Returns how each dead worker ended.
 */
async function supervise(done: () => Promise<boolean>, deadlineMs: number): Promise<{ exits: Exit[]; last: Spawned }> {
  const exits: Exit[] = [];
  let worker = t.worker("w.0", ARGS);
  await eventually(
    async () => {
      if (worker.hasExited()) {
        exits.push(await worker.exited);
        worker = t.worker(`w.${exits.length}`, ARGS);
      }
      return done();
    },
    deadlineMs,
    "the jobs to settle",
  );
  return { exits, last: worker };
}

describe("a job that kills its worker on every attempt", () => {
  for (const how of ["sigkill", "exit"] as const) {
    it(`is buried as dead after max_attempts (${how === "exit" ? "process.exit(3)" : "SIGKILL to itself"}), and other jobs still run`, { timeout: 60_000 }, async () => {
      const { id } = await t.errand.enqueue("poison", { how }, { maxAttempts: 3 });
      const others = await t.errand.enqueueMany(Array.from({ length: 5 }, () => ({ kind: "record", payload: { ms: 0 }, priority: -1 })));
      const finished = async () => {
        const counts = await t.statusCounts();
        return counts.dead === 1 && counts.done === others.length;
      };
      const { exits, last } = await supervise(finished, 45_000);

      // One dead worker per attempt, no more: the third expiry buries the job instead of
      // handing it to a fourth worker.
      expect(exits).toEqual(Array.from({ length: 3 }, () => (how === "exit" ? { code: 3, signal: null } : { code: null, signal: "SIGKILL" })));
      const job = await t.job(id);
      expect(job).toMatchObject({ status: "dead", attempts: 3 });
      expect(job.last_error).toMatch(/^lease expired on attempt 3 of 3 \(worker .+ died or overran its lease\)$/);
      expect(job.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
      expect(job.errors.every((e) => e.error.startsWith("lease expired on attempt"))).toBe(true);
      expect((await t.effects(id)).map((e) => e.attempt)).toEqual([1, 2, 3]);

      await last.waitForLog((l) => l.event === "started", 15_000, "started");
      last.child.kill("SIGTERM");
      expect(await last.exited).toEqual({ code: 0, signal: null });
    });
  }
});
