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
    await t.sql(`DROP INDEX ${t.schema}.jobs_ready_plain`);
    await t.sql(`DROP INDEX ${t.schema}.jobs_batch`);
    // A concurrent build that fails (here on duplicates) leaves its index behind, INVALID.
    await expect(t.sql(`CREATE UNIQUE INDEX CONCURRENTLY jobs_ready_plain ON ${t.schema}.jobs (kind)`)).rejects.toThrow(/duplicate|unique/i);
    expect((await indexes()).jobs_ready_plain?.valid).toBe(false);

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
});
