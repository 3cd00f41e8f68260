import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { byId, queriesFor } from "../../src/sql/jobs.js";
import { observeQueriesFor } from "../../src/sql/observe.js";
import { freshSchema } from "../support/db.js";

// PostgreSQL only. The worker's batch statements must keep a plan that is linear in the
// batch whatever the table's statistics say and whichever plan (generic or custom) the
// server caches. A join of `unnest($ids)` to the table once chose a nested loop that
// compared every running row with every id: 250–400 ms for a 1,000-job completion. So
// must the statements that take many rows at once: a cancel, an enqueue, stats.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 2 });
afterAll(() => admin.end());

/** What ANALYZE saw last: the states that misled the planner before. */
const statistics: Record<string, (schema: string, c: pg.PoolClient) => Promise<void>> = {
  "an empty table": async () => {},
  "only ready jobs": (s, c) => c.query(`INSERT INTO ${s}.jobs (kind) SELECT 'k' FROM generate_series(1, 5000)`).then(() => {}),
  "a million-row history in miniature": (s, c) =>
    c.query(`INSERT INTO ${s}.jobs (kind, status, finished_at) SELECT 'k', 'done', now() FROM generate_series(1, 50000)`).then(() => {}),
};

const batch = 1000;

interface PlanNode {
  "Node Type": string;
  Operation?: string;
  "Relation Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** A plan node and all those below it. */
function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

async function plan(c: pg.PoolClient, name: string, args: string): Promise<string> {
  const { rows } = await c.query<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ${name}(${args})`);
  return rows.map((r) => r["QUERY PLAN"]).join("\n");
}

/** The plans of the statements `sql` runs, nested ones too (a function's), as auto_explain reports them. */
async function nestedPlans(c: pg.PoolClient, sql: string): Promise<string[]> {
  const plans: string[] = [];
  const collect = (notice: { message?: string }) => void (notice.message?.includes("plan:") && plans.push(notice.message));
  await c.query("LOAD 'auto_explain'");
  await c.query("SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice");
  c.on("notice", collect);
  try {
    await c.query(sql);
  } finally {
    c.off("notice", collect);
    await c.query("SET auto_explain.log_min_duration = -1");
  }
  return plans;
}

/**
 * Runs `fn` on a connection of its own, on a schema of its own that errand migrated (and
 * `fill` filled first, through errand), then drops both.
 */
async function inFreshSchema(fn: (schema: string, c: pg.PoolClient) => Promise<void>, fill?: (errand: Errand) => Promise<unknown>): Promise<void> {
  const schema = freshSchema();
  const errand = await Errand.open({ connectionString: url, schema, poolSize: 1 });
  try {
    await fill?.(errand);
  } finally {
    await errand.close();
  }
  const c = await admin.connect();
  try {
    await fn(schema, c);
  } finally {
    await c.query("DEALLOCATE ALL").catch(() => {});
    c.release(true);
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  }
}

describe("batch statement plans", () => {
  for (const [state, fill] of Object.entries(statistics)) {
    for (const mode of ["force_generic_plan", "force_custom_plan"]) {
      it(`stay linear after ANALYZE saw ${state} (${mode})`, () =>
        inFreshSchema(async (schema, c) => {
          await fill(schema, c);
          await c.query(`ANALYZE ${schema}.jobs`);
          // Then the table fills up and a worker holds a thousand jobs, unseen by ANALYZE.
          await c.query(`INSERT INTO ${schema}.jobs (kind) SELECT 'k' FROM generate_series(1, 5000)`);
          const { rows } = await c.query<{ id: string; attempts: number }>(
            `UPDATE ${schema}.jobs SET status = 'running', attempts = 1, locked_by = 'w', locked_until = now() + interval '1 minute'
             WHERE id IN (SELECT id FROM ${schema}.jobs WHERE status = 'ready' ORDER BY id LIMIT ${batch}) RETURNING id, attempts`,
          );
          expect(rows).toHaveLength(batch);
          // And done_jobs holds what the table moved out since, unseen by ANALYZE too.
          await c.query(
            `INSERT INTO ${schema}.done_jobs (id, kind, payload, status, priority, attempts, max_attempts, run_at, errors, created_at, started_at, finished_at, queue)
             SELECT -g, 'k', '{}', 'done', 0, 1, 8, now(), '[]', now(), now(), now() - g * interval '1 millisecond', 'default' FROM generate_series(1, 20000) AS g`,
          );
          await c.query(`SET plan_cache_mode = ${mode}`);
          const q = queriesFor(schema);
          const ids = rows.map((r) => r.id);
          const idArray = `'{${ids.join(",")}}'::bigint[]`;
          const json = (values: readonly unknown[]) => `'${byId(ids, values).replaceAll("'", "''")}'::jsonb`;
          const statements = {
            claim: { text: q.claim.text, args: `${batch}, 'w', '{}'::jsonb, 60000, 10, 'default', '{k}'::text[]` },
            claimFrom: { text: q.claimFrom.text, args: `${batch}, 'w', '{}'::jsonb, 60000, 10, 'default', '{k}'::text[], 0, ${Date.now() * 1000 - 60e6}, 1, true` },
            firstReady: { text: q.firstReady.text, args: `'default', '{k}'::text[], 0` },
            floorHint: { text: q.floorHint.text, args: `'default'` },
            start: { text: q.start.text, args: `${idArray}, ${json(rows.map((r) => r.attempts))}, 'w'` },
            heartbeat: { text: q.heartbeat.text, args: `${idArray}, ${json(rows.map((r) => r.attempts))}, 'w', '{}'::jsonb, 60000, '{}'::bigint[]` },
            complete: { text: q.complete.text, args: `${idArray}, ${json(rows.map((r) => r.attempts))}, 'w'` },
            fail: { text: q.fail.text, args: `${idArray}, ${json(rows.map((r) => [r.attempts, 1000, false, "boom"]))}, 'w'` },
            release: { text: q.release.text, args: `${idArray}, ${json(rows.map((r) => [r.attempts, 0]))}, 'w'` },
            rescue: { text: q.rescue.text, args: "100, 200, true" },
          };
          for (const [name, { text }] of Object.entries(statements)) await c.query(`PREPARE ${name} AS ${text}`);
          const claim = await plan(c, "claim", statements.claim.args);
          // The claim reads the ready index (in order, or as a bitmap and a sort while the
          // statistics have never seen a ready job) and updates the locked rows by ctid.
          expect(claim).toMatch(/Index Scan (using|on) jobs_open/);
          expect(claim).toMatch(/Tid Scan on jobs j/);
          expect(claim).not.toMatch(/Seq Scan|Join/);
          // From a floor: the three ranges of the ready index read one after another in
          // claim order (an Append, no sort), the floor's range starting at its key.
          const claimFrom = await plan(c, "claimFrom", statements.claimFrom.args);
          expect(claimFrom).toMatch(/Append/);
          expect(claimFrom).not.toMatch(/Merge Append|Sort|Seq Scan|Join/);
          expect(claimFrom.match(/Index Scan using jobs_open_plain/g)).toHaveLength(3);
          expect(claimFrom).toMatch(/Index Cond: [^\n]*ROW\(run_at, id\) >=/);
          // Where the other workers' claims left off: the newest lease records, backwards.
          expect(claimFrom).toMatch(/Index Scan Backward using leases_pkey/);
          // The floor's probe reads the ready index in claim order to its first match, the
          // floor's priority from its ready mark (migration 028); the hint, done_jobs' last
          // 1,000 by their finished_at index, backwards.
          const firstReady = await plan(c, "firstReady", statements.firstReady.args);
          expect(firstReady).toMatch(/Append/);
          expect(firstReady).not.toMatch(/Merge Append|Sort|Seq Scan|Bitmap/);
          expect(firstReady.match(/Index Scan using jobs_open_plain/g)).toHaveLength(3);
          expect(firstReady).toMatch(/Index Cond: [^\n]*run_at >= COALESCE\(/);
          // The probe's raise of the mark first looks for the first ready job above the
          // mark: in claim order, through the same index (a statement inside PL/pgSQL, whose
          // plan auto_explain reports as a notice).
          const raise = (await nestedPlans(c, `SELECT ${schema}.raise_ready_mark('default', 0)`)).filter((text) => /on jobs j\b/.test(text));
          expect(raise).toHaveLength(1);
          expect(raise[0]).toMatch(/Index Scan using jobs_open_plain on jobs j/);
          expect(raise[0]).toMatch(/Index Cond: [^\n]*priority = [^\n]*run_at >= /); // a custom plan folds the mark in
          expect(raise[0]).not.toMatch(/Sort|Seq Scan|Bitmap/);
          const floorHint = await plan(c, "floorHint", statements.floorHint.args);
          expect(floorHint).toMatch(/Index Scan Backward using done_jobs_finished/);
          expect(floorHint).not.toMatch(/Seq Scan/);
          // The rescuer's sweep of every running job reads the two open indexes, not the
          // whole table with its history (it did: 770 ms a sweep beside 10,000,000 rows).
          // Where the statistics say that every row is open, a scan of the small table is
          // the same work, and the planner may take it.
          if (state === "a million-row history in miniature") {
            const rescue = await plan(c, "rescue", statements.rescue.args);
            expect(rescue).toMatch(/Index Scan using jobs_open_plain/);
            expect(rescue).toMatch(/jobs_open_keyed/);
            expect(rescue).not.toMatch(/Seq Scan on jobs/);
          }
          for (const name of ["heartbeat", "start", "complete", "fail", "release"] as const) {
            const text = await plan(c, name, statements[name].args);
            const shown = `${name}:\n${text.replace(/'[^'\n]{60,}'/g, "'…'")}`;
            // No join at all: each row is found by its id, through the primary key — or,
            // in a custom plan on a table the statistics call tiny, by a scan that looks
            // ids up in the constant array (hashed by PostgreSQL), which is linear too.
            expect(shown).not.toMatch(/Nested Loop|Join|Function Scan/);
            // No statement runs a subplan per row (complete's update takes its ids from an
            // InitPlan: those its delete did not move to done_jobs).
            expect(shown).not.toMatch(/SubPlan/);
            // Both of complete's reads of jobs (the delete's and the update's) find rows by id.
            if (name === "complete") expect(shown.match(/jobs_pkey|Seq Scan on jobs j[^\n]*\n\s+Filter: [^\n]*id = ANY/g)).toHaveLength(2);
            // (A bitmap of the primary key is as linear; complete's plan took one once the
            // rows grew wider with result and progress.)
            if (mode === "force_generic_plan") expect(shown).toMatch(/Index Scan on jobs_pkey|Index Scan using jobs_pkey on jobs j|Bitmap Index Scan on jobs_pkey/);
            expect(shown).toMatch(/jobs_pkey|Seq Scan on jobs j[^\n]*\n\s+Filter: [^\n]*id = ANY/);
          }
          // Run, complete moves all the plain jobs out, and its update then reads none of
          // them again (it once looked each up a second time to filter it out). The jobs
          // are reserved (no started_at): their attempt is the next one.
          const { rows: analyzed } = await c.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
            `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE complete(${idArray}, ${json(rows.map((r) => r.attempts + 1))}, 'w')`,
          );
          const nodes = flatten(analyzed[0]!["QUERY PLAN"][0].Plan);
          expect(nodes.find((n) => n["Node Type"] === "ModifyTable" && n.Operation === "Delete")?.["Actual Rows"]).toBe(batch);
          const update = nodes.find((n) => n["Node Type"] === "ModifyTable" && n.Operation === "Update" && n["Relation Name"] === "jobs");
          const read = flatten(update!).filter((n) => n["Relation Name"] === "jobs" && n !== update);
          expect(read.length).toBeGreaterThan(0);
          for (const n of read) expect([n["Actual Rows"], n["Rows Removed by Filter"] ?? 0]).toEqual([0, 0]);
          // A cancel by kind of thousands of jobs reads each of its CTEs once: it once
          // joined its found rows to its updated ones, which the planner expected one of
          // each, and compared every pair (16,000,000 for 4,000 jobs, 3 s).
          const open = Number((await c.query(`SELECT count(*) FROM ${schema}.jobs WHERE kind = 'k' AND status IN ('ready', 'running')`)).rows[0].count);
          expect(open).toBeGreaterThanOrEqual(4000);
          await c.query(`PREPARE cancel AS ${q.cancel.text}`);
          const { rows: cancelled } = await c.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE cancel(NULL, 'k')`);
          const cancel = flatten(cancelled[0]!["QUERY PLAN"][0].Plan);
          expect(cancel[0]!["Actual Rows"]).toBe(open);
          const scans = cancel.filter((n) => n["Node Type"] === "CTE Scan");
          expect(scans.length).toBeGreaterThan(0);
          for (const n of scans) expect(n["Actual Loops"]).toBeLessThanOrEqual(1);
        }));
    }
  }
});

describe("enqueue plans", () => {
  const keyed = (mode: string) => Array.from({ length: 2000 }, (_, n) => ({ kind: "k", payload: {}, priority: 0, max_attempts: 8, dedupe_key: `${mode}${n}`, dedupe_mode: mode }));
  it("match keys through a hash or a lookup, never each with each", () =>
    inFreshSchema(
      async (schema, c) => {
        await c.query(`UPDATE ${schema}.jobs SET status = 'done', finished_at = now()`);
        await c.query(`ANALYZE ${schema}.jobs`);
        // The keys a 'replace' batch replaces were left out with `<> ALL(ARRAY(…))`, and the
        // released keys' rows re-checked with `= ANY(ARRAY(…))`: each compared every row
        // with every key (about 2 s for 10,000 of either).
        await c.query(`PREPARE enqueue AS ${queriesFor(schema).enqueue.text}`);
        for (const mode of ["force_generic_plan", "force_custom_plan"]) {
          await c.query(`SET plan_cache_mode = ${mode}`);
          const replacing = await plan(c, "enqueue", `'${JSON.stringify(keyed("replace"))}'::jsonb`);
          expect(replacing).toMatch(/NOT \(hashed SubPlan \d+\)/);
          expect(replacing).not.toMatch(/<> ALL/);
          const again = await plan(c, "enqueue", `'${JSON.stringify(keyed("queued"))}'::jsonb`);
          const released = again.slice(again.indexOf("CTE released"), again.indexOf("CTE replacing"));
          expect(released).toMatch(/Update on jobs/);
          expect(released).not.toMatch(/Filter: [^\n]*= ANY \(\$/);
        }
      },
      // Jobs whose keys are free again: they finished.
      (errand) => errand.enqueueMany(keyed("queued").map((job) => ({ kind: job.kind, payload: job.payload, dedupeKey: job.dedupe_key, dedupe: "queued" as const }))),
    ));
});

describe("stats plans", () => {
  it("read the waiting and running jobs once, and look for each queue and kind of them among the workers once, not for each job", () =>
    inFreshSchema(async (schema, c) => {
      // Each of 1,000,000 ready jobs was looked for among the workers (1.6–2.3 s), and the
      // figures per kind, the queue depths and the unserved jobs each read them all.
      await c.query(`INSERT INTO ${schema}.jobs (kind) SELECT 'k' || (g % 3) FROM generate_series(1, 3000) g`);
      await c.query(`INSERT INTO ${schema}.workers (id, queues, kinds) SELECT 'w' || g, '{default}', '{k0}' FROM generate_series(1, 2) g`);
      await c.query(`ANALYZE ${schema}.jobs`);
      const stats = observeQueriesFor(schema).stats.text;
      const { rows: figures } = await c.query<{ queue: string; kind: string; ready: string; unserved: string }>(stats);
      expect(figures.map(({ queue, kind, ready, unserved }) => ({ queue, kind, ready, unserved }))).toEqual([
        { queue: "default", kind: "k0", ready: "1000", unserved: "0" },
        { queue: "default", kind: "k1", ready: "1000", unserved: "1000" },
        { queue: "default", kind: "k2", ready: "1000", unserved: "1000" },
      ]);
      const { rows } = await c.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${stats}`);
      const nodes = flatten(rows[0]!["QUERY PLAN"][0].Plan);
      for (const n of nodes) expect(n["Actual Loops"]).toBeLessThanOrEqual(3);
      // The open jobs without a concurrency key, those with one, and the dead ones.
      const scans = nodes.filter((n) => n["Relation Name"] === "jobs");
      expect(scans).toHaveLength(3);
      for (const n of scans) expect(n["Actual Loops"]).toBe(1);
    }));
});
