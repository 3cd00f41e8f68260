import type pg from "pg";
import { expect, it } from "vitest";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: a second connection claims the job while the enqueue is in flight.
const t = useTestErrand();

it('dedupe "replace" enqueues a new job when the waiting one is claimed between the statement\'s look and its update', async () => {
  const first = await t.errand.enqueue("task", { n: 1 }, { dedupeKey: "k", dedupe: "replace" });
  const claimer = await (t.db as pg.Pool).connect();
  try {
    // What a worker's claim writes, left uncommitted: the enqueue sees the job waiting
    // in its snapshot, then waits on the row's lock to replace it.
    await claimer.query("BEGIN");
    await claimer.query(
      `UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(),
              locked_by = 'w', locked_until = now() + interval '1 minute' WHERE id = $1`,
      [first.id],
    );
    const pending = t.errand.enqueue("task", { n: 2 }, { dedupeKey: "k", dedupe: "replace" });
    await eventually(
      async () =>
        (
          await t.sql<{ n: number }>(
            // The statement's text as pg_stat_activity keeps it (its first 1 kB) names the schema.
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE query LIKE '%WITH input AS%' || $1 || '%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
            [t.schema],
          )
        )[0]!.n === 1,
      10_000,
      "the enqueue waiting on the claimed row",
    );
    await claimer.query("COMMIT");
    const result = await pending;
    expect(result.duplicate).toBe(false);
    expect(result.id).not.toBe(first.id);
  } finally {
    claimer.release();
  }
  expect(await t.sql(`SELECT id::text, status, payload, dedupe_key FROM ${t.schema}.all_jobs ORDER BY id`)).toEqual([
    { id: first.id, status: "running", payload: { n: 1 }, dedupe_key: null },
    { id: expect.any(String), status: "ready", payload: { n: 2 }, dedupe_key: "k" },
  ]);
});
