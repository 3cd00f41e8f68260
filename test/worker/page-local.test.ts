import { describe, expect, it } from "vitest";
import { eventually, useTestErrand } from "../support/db.js";

// Migration 018: jobs pages are filled to half at insert, so that a job's claim and its
// completion (neither can be HOT) write their row versions on the job's own page.
describe("the jobs table's free room", () => {
  const t = useTestErrand();

  it("keeps most jobs on the page they were inserted on through their claim and completion", async () => {
    const total = 400;
    // A payload of about 100 bytes: some 20 jobs fill half a page.
    await t.errand.enqueueMany(Array.from({ length: total }, (_, i) => ({ kind: "work", payload: { i, note: "x".repeat(80) } })));
    const pageOf = async () =>
      new Map((await t.sql<{ id: string; page: number }>(`SELECT id::text, (ctid::text::point)[0]::int AS page FROM ${t.schema}.jobs`)).map((r) => [r.id, r.page]));
    const before = await pageOf();
    const worker = t.errand.worker({ handlers: { work: async () => {} } });
    await worker.start();
    try {
      await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.jobs WHERE status = 'done'`))[0]!.n === total, 30_000, "every job done");
    } finally {
      await worker.stop();
    }
    const after = await pageOf();
    const stayed = [...before].filter(([id, page]) => after.get(id) === page).length;
    // Checked: on full pages (fillfactor 100) 9–11 % stay, here 85–90 %.
    expect(stayed / total).toBeGreaterThan(0.6);
  });
});
