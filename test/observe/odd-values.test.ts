import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { createDashboard } from "../../src/dashboard/index.js";
import { cliDatabase, errandCli } from "../support/cli.js";
import { type TestErrand, onPostgres, testErrand } from "../support/db.js";
import { dashboardSession } from "../support/dashboard.js";

// Values a plain-SQL insert (or an old bug) can leave in the table: every page and
// figure must still show the row, never fail.
const oddRows = (jobs: string) => `
  INSERT INTO ${jobs} (kind, payload, run_at) VALUES ('past', '{}', '-infinity'), ('future', '{}', 'infinity'), ('normal', '{}', now() - interval '1 minute');
  INSERT INTO ${jobs} (kind, payload, status, attempts, run_at, started_at, locked_until, locked_by)
  VALUES ('stuck', '{}', 'running', 1, '-infinity', '-infinity', 'infinity', 'w1');
  INSERT INTO ${jobs} (kind, payload, status, attempts, max_attempts, run_at, finished_at, last_error)
  VALUES ('buried', '{}', 'dead', 1, 1, 'infinity', 'infinity', 'boom')`;

describe("jobs whose times are ±infinity", () => {
  let t: TestErrand;
  const ids: Record<string, string> = {};
  beforeEach(async () => {
    t = await testErrand();
    for (const statement of oddRows(`${t.schema}.jobs`).split(";")) await t.sql(statement);
    for (const row of await t.sql<{ id: string; kind: string }>(`SELECT id::text, kind FROM ${t.schema}.all_jobs`)) ids[row.kind] = row.id;
  });
  afterEach(() => t.cleanup());

  it("stats count them; a job due since -infinity has no age", async () => {
    const stats = await t.errand.stats();
    expect(stats.kinds.past).toMatchObject({ ready: 1, oldestReadyAgeMs: null });
    expect(stats.kinds.future).toMatchObject({ ready: 0, scheduled: 1 });
    expect(stats.kinds.stuck).toMatchObject({ running: 1, expiredLeases: 0 });
    expect(stats.kinds.buried).toMatchObject({ dead: 1 });
    expect(stats.total).toMatchObject({ ready: 2, scheduled: 1, running: 1, dead: 1 });
    expect(stats.total.oldestReadyAgeMs).toBeGreaterThanOrEqual(59_000);
    expect(stats.total.oldestReadyAgeMs).toBeLessThan(3_600_000);
  });

  it("getJob gives Dates that compare and sort as infinities", async () => {
    const past = (await t.errand.getJob(ids.past!))!;
    const future = (await t.errand.getJob(ids.future!))!;
    const normal = (await t.errand.getJob(ids.normal!))!;
    expect(past.runAt < normal.runAt && normal.runAt < future.runAt).toBe(true);
    expect(past.runAt.toISOString()).toBe("-271821-04-20T00:00:00.000Z");
    expect(JSON.parse(JSON.stringify(future)).runAt).toBe("+275760-09-13T00:00:00.000Z");
    expect((await t.errand.dead.list())[0]!.finishedAt!.getTime()).toBe(8.64e15);
  });

  it("the overview, the job list and each job's page show them", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const overview = await s.get("/");
    expect(overview.status).toBe(200);
    expect(overview.text).toMatch(/<tr data-kind="past">/);
    const list = await s.get("/jobs");
    expect(list.status).toBe(200);
    expect(list.text).toMatch(new RegExp(`data-job-id="${ids.past}">[\\s\\S]*?<span class="infinite">-infinity</span>`));
    expect(list.text).toMatch(new RegExp(`data-job-id="${ids.future}">[\\s\\S]*?<span class="infinite">infinity</span>`));
    for (const kind of ["past", "future", "stuck", "buried"]) {
      const page = await s.get(`/jobs/${ids[kind]}`);
      expect(page.status, kind).toBe(200);
      expect(page.text, kind).toMatch(/<dt>Run at<\/dt><dd><span class="infinite">-?infinity<\/span><\/dd>/);
    }
    expect((await s.get(`/jobs/${ids.stuck}`)).text).toMatch(/<dt>Lease until<\/dt><dd><span class="infinite">infinity<\/span><\/dd>/);
    expect((await s.get("/dead")).status).toBe(200);
  });
});

describe("dashboard filters", () => {
  let t: TestErrand;
  beforeAll(async () => {
    t = await testErrand();
  });
  afterAll(() => t.cleanup());

  it.each([
    ["/jobs?kind=a%00b", "kind"],
    ["/jobs?q=%00", "q"],
    ["/jobs?kind=%ED%A0%80", null],
    ["/dead?kind=%00", "kind"],
    ["/dead?error=boom%00", "error"],
    ["/jobs/9223372036854775808", "id"],
    ["/jobs?before=99999999999999999999", "before"],
  ])("%s is a 400 naming the field, or a page, never a 500", async (path, field) => {
    const page = await dashboardSession(createDashboard(t.errand)).get(path);
    if (field === null) {
      expect(page.status).toBe(200);
      return;
    }
    expect(page.status).toBe(400);
    expect(page.text).toContain(`${field}: `);
  });
});

describe("errand stats with ±infinity rows", () => {
  const db = cliDatabase();
  afterAll(() => db.cleanup());

  it("prints them and exits 0", async () => {
    expect((await errandCli(["migrate", ...db.flags])).code).toBe(0);
    const url = process.env.ERRAND_TEST_URL;
    const dataDir = db.flags[db.flags.indexOf("--data-dir") + 1];
    const errand = await Errand.open(onPostgres ? { connectionString: url!, schema: db.schema } : { dataDir: dataDir!, schema: db.schema });
    try {
      await errand.driver.transaction((tx) => tx.exec(oddRows(`${db.schema}.jobs`)));
    } finally {
      await errand.close();
    }
    const table = await errandCli(["stats", ...db.flags]);
    expect(table.stderr).toBe("");
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^past\s+1\s+0\s+0\s+0\s+0\s+-\s/m);
    const json = await errandCli(["stats", "--json", ...db.flags]);
    expect(JSON.parse(json.stdout)).toMatchObject({ total: { ready: 2, scheduled: 1, running: 1, dead: 1 } });
  }, 120_000);
});
