import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver } from "../../src/driver/types.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

it("asks the driver to make its plans again when a backlog follows an empty queue, once", async () => {
  // The statements' plans were made while the queue was empty (see planLifetimeMs in src/driver/pg.ts).
  let refreshes = 0;
  const driver: Driver = { ...t.errand.driver, refreshPlans: () => void refreshes++, close: async () => {} };
  let ran = 0;
  const worker = Errand.fromDriver(driver, { schema: t.schema }).worker({ concurrency: 5, prefetch: 10, rescueIntervalMs: 0, handlers: { k: async () => void ran++ } });
  const done = async (count: number) => {
    await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'done'`))[0]!.n === count, 30_000, `${count} jobs done`);
  };
  await worker.start();
  try {
    await t.errand.enqueue("k", {}); // one job: its claim comes back short
    await done(1);
    expect(refreshes).toBe(0);
    await t.errand.enqueueMany(Array.from({ length: 200 }, () => ({ kind: "k", payload: {} })));
    await done(201);
    expect(refreshes).toBe(1); // not again for each full claim of the backlog
  } finally {
    await worker.stop();
  }
  expect(ran).toBe(201);
});
