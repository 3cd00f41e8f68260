import { describe, expect, it } from "vitest";
import { useTestErrand } from "../support/db.js";

// What a migration leaves to be done outside its transaction (indexes built CONCURRENTLY,
// constraints validated, replaced indexes dropped) is finished by the next run when a run
// was interrupted half-way: these tests leave the schema as such a run would.
const t = useTestErrand();

async function indexes(): Promise<Record<string, { valid: boolean; def: string }>> {
  const rows = await t.sql<{ name: string; valid: boolean; def: string }>(
    `SELECT c.relname AS name, i.indisvalid AS valid, pg_get_indexdef(i.indexrelid) AS def
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = $1::regnamespace`,
    [t.schema],
  );
  return Object.fromEntries(rows.map(({ name, valid, def }) => [name, { valid, def }]));
}

describe("a migration run that was interrupted", () => {
  it("rebuilds an index a failed concurrent build left invalid, and builds a missing one", async () => {
    const before = await indexes();
    await t.errand.enqueueMany([{ kind: "same", payload: {} }, { kind: "same", payload: {} }]);
    await t.sql(`DROP INDEX ${t.schema}.jobs_open_plain`);
    await t.sql(`DROP INDEX ${t.schema}.jobs_batch`);
    // A concurrent build that fails (here on duplicates) leaves its index behind, INVALID.
    await expect(t.sql(`CREATE UNIQUE INDEX CONCURRENTLY jobs_open_plain ON ${t.schema}.jobs (kind)`)).rejects.toThrow(/duplicate|unique/i);
    expect((await indexes()).jobs_open_plain?.valid).toBe(false);

    expect(await t.errand.migrate()).toEqual([]);
    expect(await indexes()).toEqual(before);
  });

  it("validates a constraint left NOT VALID and drops an index the latest schema replaced", async () => {
    const before = await indexes();
    await t.sql(`ALTER TABLE ${t.schema}.jobs DROP CONSTRAINT jobs_queue_named`);
    await t.sql(`ALTER TABLE ${t.schema}.jobs ADD CONSTRAINT jobs_queue_named CHECK (queue <> '') NOT VALID`);
    await t.sql(`CREATE INDEX jobs_ready_queue ON ${t.schema}.jobs (queue, priority DESC, run_at, id) WHERE status = 'ready'`);

    expect(await t.errand.migrate()).toEqual([]);
    const [check] = await t.sql<{ convalidated: boolean }>(`SELECT convalidated FROM pg_constraint WHERE conname = 'jobs_queue_named' AND connamespace = $1::regnamespace`, [t.schema]);
    expect(check?.convalidated).toBe(true);
    expect(await indexes()).toEqual(before);
  });

  it("fills a migration's new columns for the rows already there when a run stopped before dropping what they replace", async () => {
    const before = await indexes();
    // Rows written before migration 020's trigger (finished ones, across several backfill
    // batches), and the index it retires still there, as a run cut short before its drops leaves them.
    await t.sql(`ALTER TABLE ${t.schema}.jobs DISABLE TRIGGER jobs_mirror`);
    await t.sql(
      `INSERT INTO ${t.schema}.jobs (kind, payload, status, finished_at, concurrency_key, started_at)
       SELECT 'old', '{}', CASE WHEN g % 3 = 0 THEN 'dead' ELSE 'done' END, now(), CASE WHEN g % 2 = 0 THEN 'tenant:1' END, now()
       FROM generate_series(1, 12000) g`,
    );
    await t.sql(`ALTER TABLE ${t.schema}.jobs ENABLE TRIGGER jobs_mirror`);
    await t.sql(`CREATE INDEX jobs_done ON ${t.schema}.jobs (finished_at) WHERE status = 'done'`);
    const mirrored = () =>
      t.sql<{ dead: string; done: string; keyed: string }>(
        `SELECT count(*) FILTER (WHERE outcome = 'dead')::text AS dead, count(*) FILTER (WHERE outcome = 'done')::text AS done,
                count(key_started_at)::text AS keyed FROM ${t.schema}.jobs`,
      );
    expect(await mirrored()).toEqual([{ dead: "0", done: "0", keyed: "0" }]);

    expect(await t.errand.migrate()).toEqual([]);
    expect(await mirrored()).toEqual([{ dead: "4000", done: "8000", keyed: "6000" }]);
    expect(await indexes()).toEqual(before);
    expect(await t.errand.dead.list({ kind: "old", limit: 1 })).toHaveLength(1);
  });
});
