import { expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { dashboardSession } from "../support/dashboard.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

it("stats, metrics and the dashboard name ready jobs no live worker serves; a worker's row comes and goes with it", async () => {
  await t.errand.enqueueMany([{ kind: "send_email" }, { kind: "send_emial" }, { kind: "send_emial" }, { kind: "resize", queue: "media" }]);
  // No worker at all: every ready job is unserved.
  expect((await t.errand.stats()).unserved).toEqual([
    { queue: "default", kind: "send_email", ready: 1 },
    { queue: "default", kind: "send_emial", ready: 2 },
    { queue: "media", kind: "resize", ready: 1 },
  ]);
  const worker = t.errand.worker({ queues: { default: 2 }, rescueIntervalMs: 0, handlers: { send_email: async () => {}, resize: async () => {} } });
  await worker.start();
  try {
    await eventually(async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE kind = 'send_email'`))[0]!.status === "done");
    const [row] = await t.sql<{ queues: string[]; kinds: string[] }>(`SELECT queues, kinds FROM ${t.schema}.workers WHERE id = $1`, [worker.id]);
    expect(row).toEqual({ queues: ["default"], kinds: ["send_email", "resize"] });
    // The typo waits; resize has a handler, but no worker serves its queue.
    const stats = await t.errand.stats();
    expect(stats.unserved).toEqual([
      { queue: "default", kind: "send_emial", ready: 2 },
      { queue: "media", kind: "resize", ready: 1 },
    ]);
    const page = await dashboardSession(createDashboard(t.errand)).get("/");
    expect(page.text).toContain("No live worker serves these jobs.");
    expect(page.text).toMatch(/<li data-unserved="default\/send_emial">send_emial in queue default: 2 ready<\/li>/);
  } finally {
    await worker.stop();
  }
  expect(await t.sql(`SELECT 1 FROM ${t.schema}.workers`)).toEqual([]);
  // A worker not seen for a minute is no longer live.
  await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds, seen_at) VALUES ('gone', '{media}', '{resize}', now() - interval '61 seconds')`);
  expect((await t.errand.stats()).unserved.map((u) => u.kind)).toEqual(["send_emial", "resize"]);
  await t.sql(`UPDATE ${t.schema}.workers SET seen_at = now()`);
  expect((await t.errand.stats()).unserved.map((u) => u.kind)).toEqual(["send_emial"]);
});
