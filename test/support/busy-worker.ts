import type { Clock } from "../../src/clock.js";
import type { Errand, WorkerOptions } from "../../src/index.js";
import { Worker } from "../../src/worker/worker.js";
import { type TestErrand, eventually } from "./db.js";

/** A worker kept busy by one slow job, for the tests of when it waits for notices (src/worker/waiting.ts). */
export interface BusyWorker {
  readonly worker: Worker;
  /** The ids of the `quick` jobs it ran, in order. */
  readonly ran: string[];
  /** Ends the slow job. */
  readonly release: () => void;
  /** What its row in the registry says (undefined: no row). */
  readonly waiting: () => Promise<boolean | undefined>;
  /** Inserts jobs of a kind it does not run, one transaction each, until it stops waiting. */
  readonly insertUntilQuiet: () => Promise<void>;
}

/**
 * Starts worker `id` of `errand` (one slot, no buffer, a ten-minute poll) and has it run a
 * slow job until `release()`: its last claim found a job, so once inserts notify it often
 * for a second it stops waiting. Its `quick` jobs record their ids. `clock`: the worker's
 * (see Worker), for a test that moves it; `prefetch`: jobs it may claim ahead (none by default).
 */
export async function busyWorker(
  t: Pick<TestErrand, "sql" | "schema" | "errand">,
  errand: Errand,
  id: string,
  { clock, prefetch = 0 }: { readonly clock?: Clock; readonly prefetch?: number } = {},
): Promise<BusyWorker> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const ran: string[] = [];
  const options: WorkerOptions = {
    workerId: id,
    concurrency: 1,
    prefetch,
    pollIntervalMs: 600_000,
    rescueIntervalMs: 0,
    // Long enough for a test that moves the clock by minutes.
    leaseMs: 3_600_000,
    handlers: { slow: () => gate, quick: async (_payload, ctx) => void ran.push(ctx.id) },
  };
  const worker = clock ? new Worker(errand.driver, errand.schema, errand.kinds, options, clock) : errand.worker(options);
  const waiting = async () => (await t.sql<{ waiting: boolean }>(`SELECT waiting FROM ${t.schema}.workers WHERE id = $1`, [id]))[0]?.waiting;
  await worker.start();
  await t.errand.enqueue("slow", {});
  await eventually(() => worker.activeCount === 1, 5_000, "the slow job running");
  const insertUntilQuiet = async () => {
    await eventually(
      async () => {
        for (let i = 0; i < 10; i++) await t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('elsewhere')`);
        return (await waiting()) === false;
      },
      10_000,
      "the busy worker to stop waiting",
    );
  };
  return { worker, ran, release, waiting, insertUntilQuiet };
}
