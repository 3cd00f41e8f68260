import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver } from "../../src/driver/types.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

/**
 * A worker whose driver counts the refreshPlans calls: one job first (its claim comes back
 * short), then a backlog of `backlog` jobs (full claims); `options` gives each job's (the
 * first job's index is -1). Returns the calls after the one job and after the backlog.
 */
async function refreshesFor(options: (i: number) => { readonly concurrencyKey?: string }, backlog: number): Promise<[number, number]> {
  // The statements' plans were made while the queue was empty (see planLifetimeMs in src/driver/pg.ts).
  let refreshes = 0;
  const driver: Driver = { ...t.errand.driver, refreshPlans: () => void refreshes++, close: async () => {} };
  let ran = 0;
  const worker = Errand.fromDriver(driver, { schema: t.schema }).worker({ concurrency: 5, prefetch: 10, rescueIntervalMs: 0, handlers: { k: async () => void ran++ } });
  const done = async (count: number) => {
    await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'done'`))[0]!.n === count, 30_000, `${count} jobs done`);
  };
  await worker.start();
  let afterOne: number;
  try {
    await t.errand.enqueue("k", {}, options(-1));
    await done(1);
    afterOne = refreshes;
    await t.errand.enqueueMany(Array.from({ length: backlog }, (_, i) => ({ kind: "k", payload: {}, ...options(i) })));
    await done(backlog + 1);
  } finally {
    await worker.stop();
  }
  expect(ran).toBe(backlog + 1);
  return [afterOne, refreshes];
}

it("asks the driver to make its plans again when a backlog follows an empty queue, once", async () => {
  // Not again for each full claim of the backlog.
  expect(await refreshesFor(() => ({}), 200)).toEqual([0, 1]);
});

it("does so for a backlog of keyed jobs, whose claim fills the free slots", async () => {
  expect(await refreshesFor((i) => ({ concurrencyKey: `key${i % 20}` }), 200)).toEqual([0, 1]);
});
