import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { ErrandError } from "../../src/index.js";
import { type TestErrand, eventually, testErrand } from "../support/db.js";
import { dashboardSession, metric, seedQueue } from "../support/dashboard.js";

let t: TestErrand;
let seeded: Awaited<ReturnType<typeof seedQueue>>;
beforeEach(async () => {
  t = await testErrand();
  seeded = await seedQueue(t.errand);
});
afterEach(() => t.cleanup());

const status = async (id: string) => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]?.status;
const ids = (text: string) => [...text.matchAll(/<tr data-job-id="(\d+)">/g)].map((m) => m[1]!);
/** The seeded `email` jobs: three due now and one scheduled an hour ahead (newest first). */
const emails = async () => (await t.sql<{ id: string }>(`SELECT id::text FROM ${t.schema}.all_jobs WHERE kind = 'email' ORDER BY id DESC`)).map((r) => r.id);

describe("cancel from the dashboard", () => {
  it("cancels a ready job from its page after a confirmation, and the page says so", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const [id] = (await emails()).slice(-1);
    const detail = await s.get(`/jobs/${id}`);
    expect(detail.text).toContain(`>Cancel job ${id}</button>`);
    const confirm = await s.post("/jobs/cancel", [["_csrf", s.token(detail.text)], ["id", id!], ["return", "job"]]);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain(`<p id="confirm-question">Cancel job ${id}?</p>`);
    expect(await status(id!)).toBe("ready"); // nothing happens before the confirmation
    const done = await s.post("/jobs/cancel", [["_csrf", s.token(confirm.text)], ["id", id!], ["return", "job"], ["confirm", "yes"]]);
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe(`/jobs/${id}?done=cancel`);
    expect(await status(id!)).toBe("cancelled");
    const after = await s.get(done.headers.get("location")!);
    expect(after.text).toContain(`Cancelled 1 job: ${id}.`);
    expect(after.text).toContain('<span class="status status-cancelled">cancelled</span>');
    expect(after.text).not.toContain("Cancel job"); // finished: no button any more
  });

  it("refuses to cancel a finished job or an unknown one, clearly, and changes nothing", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const done = seeded.resize[0]!;
    const page = await s.get(`/jobs/${done}`);
    expect(page.text).not.toContain("Cancel job");
    const token = s.token((await s.get("/jobs?status=ready")).text);
    const refused = await s.post("/jobs/cancel", [["_csrf", token], ["id", done], ["confirm", "yes"]]);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain(`cannot cancel job ${done} (done): already finished; nothing was cancelled`);
    expect(refused.text).toContain(`href="/jobs/${done}"`);
    // All or nothing: a ready job named with a dead one stays ready.
    const [ready] = await emails();
    const mixed = await s.post("/jobs/cancel", [["_csrf", token], ["id", ready!], ["id", seeded.dead[0]!], ["confirm", "yes"]]);
    expect(mixed.status).toBe(409);
    expect(mixed.text).toContain(`job ${seeded.dead[0]} (dead)`);
    expect(await status(ready!)).toBe("ready");
    const unknown = await s.post("/jobs/cancel", [["_csrf", token], ["id", "999999"], ["confirm", "yes"]]);
    expect(unknown.status).toBe(409);
    expect(unknown.text).toContain("no job with id 999999; nothing was cancelled");
    expect((await s.post("/jobs/cancel", [["_csrf", token], ["id", "abc"]])).status).toBe(400);
    expect((await s.post("/jobs/cancel", [["_csrf", token]])).text).toContain("select at least one job to cancel");
    expect(await status(done)).toBe("done");
  });

  it("cancels a running job: its handler's signal aborts with a cancel reason", async () => {
    await t.sql(`DELETE FROM ${t.schema}.jobs WHERE status = 'ready'`); // the worker runs only this one
    const { id } = await t.errand.enqueue("slow", {});
    let reason: unknown;
    const worker = t.errand.worker({
      handlers: { slow: (_payload, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => ((reason = ctx.signal.reason), resolve()))) },
    });
    await worker.start();
    try {
      await eventually(async () => (await status(id)) === "running", 10_000, "the job to run");
      const s = dashboardSession(createDashboard(t.errand));
      const detail = await s.get(`/jobs/${id}`);
      expect(detail.text).toContain(`>Cancel job ${id}</button>`);
      const done = await s.post("/jobs/cancel", [["_csrf", s.token(detail.text)], ["id", id], ["return", "job"], ["confirm", "yes"]]);
      expect(done.status).toBe(303);
      await eventually(() => reason !== undefined, 10_000, "the handler's signal to abort");
      expect((reason as ErrandError).code).toBe("cancelled");
      expect(await status(id)).toBe("cancelled");
    } finally {
      await worker.stop({ timeout: 0 });
    }
  });

  it("cancels selected ready and scheduled jobs from the list, which offers it for ready and running jobs only", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const list = await s.get("/jobs?status=ready&kind=email");
    expect(list.text).toContain('<form method="post" action="/jobs/cancel" id="job-list">');
    expect(list.text).toContain(">Cancel selected</button>");
    expect(ids(list.text)).toHaveLength(4);
    expect((await s.get("/jobs")).text).not.toContain("Cancel selected");
    expect((await s.get("/jobs?status=done")).text).not.toContain("Cancel selected");
    const [scheduled, ready] = await emails(); // the newest is the scheduled one
    const confirm = await s.post("/jobs/cancel", [["_csrf", s.token(list.text)], ["id", scheduled!], ["id", ready!]]);
    expect(confirm.text).toContain(`Cancel 2 jobs: ${scheduled}, ${ready}?`);
    const done = await s.post("/jobs/cancel", [["_csrf", s.token(list.text)], ["id", scheduled!], ["id", ready!], ["confirm", "yes"]]);
    expect(done.status).toBe(303);
    const after = await s.get(done.headers.get("location")!);
    expect(after.text).toMatch(new RegExp(`Cancelled 2 jobs: (${scheduled}, ${ready}|${ready}, ${scheduled})\\.`));
    expect(ids(after.text).sort()).toEqual([scheduled, ready].sort());
    expect([await status(scheduled!), await status(ready!)]).toEqual(["cancelled", "cancelled"]);
    expect(ids((await s.get("/jobs?status=ready&kind=email")).text)).toHaveLength(2);
  });

  it("has the dead-letter actions' security: CSRF token, same origin, read-only", async () => {
    const [id] = await emails();
    const s = dashboardSession(createDashboard(t.errand));
    const token = s.token((await s.get(`/jobs/${id}`)).text);
    expect((await s.post("/jobs/cancel", [["id", id!], ["confirm", "yes"]])).status).toBe(403);
    expect((await s.post("/jobs/cancel", [["_csrf", token.slice(0, -2) + "xx"], ["id", id!], ["confirm", "yes"]])).status).toBe(403);
    expect((await s.post("/jobs/cancel", [["_csrf", token], ["id", id!], ["confirm", "yes"]], { origin: "https://evil.example" })).status).toBe(403);
    const readOnly = dashboardSession(createDashboard(t.errand, { readOnly: true }));
    expect((await readOnly.get(`/jobs/${id}`)).text).not.toContain("Cancel job");
    expect((await readOnly.get("/jobs?status=ready")).text).not.toContain("Cancel selected");
    expect((await readOnly.post("/jobs/cancel", [["id", id!], ["confirm", "yes"]])).status).toBe(403);
    expect(await status(id!)).toBe("ready");
  });
});

describe("timeouts and cancels on the overview", () => {
  it("shows cancelled jobs retained, and timeouts and cancels of the last hour, in total and per kind", async () => {
    const [a, b] = await emails();
    await t.errand.cancel({ ids: [a!, b!] });
    // Two timed-out attempts of 'resize' in the last hour, as the worker counts them.
    await t.sql(`INSERT INTO ${t.schema}.outcome_counts (bucket, kind, shard, failed, timed_out) VALUES (now() - interval '5 minutes', 'resize', 0, 2, 2)`);
    const page = await dashboardSession(createDashboard(t.errand)).get("/");
    expect(metric(page.text, "cancelled")).toBe("2");
    expect(metric(page.text, "cancels")).toBe("2");
    expect(metric(page.text, "timed-out")).toBe("2");
    expect(page.text).toMatch(/<div class="card alert" data-metric="timed-out">/);
    expect(page.text).toContain('href="/jobs?status=cancelled"');
    // email: ready 1, scheduled 0, running 0, done 0, dead 0, cancelled 2 (linked) … timed out 0, cancels 2.
    expect(page.text).toMatch(/<tr data-kind="email">.*?<a href="\/jobs\?kind=email&amp;status=cancelled">2<\/a><\/td><td class="num">[^<]*<\/td>\n<td class="num">0<\/td><td class="num">0<\/td><td class="num">0<\/td><td class="num">2<\/td>/s);
    expect(page.text).toMatch(/<tr data-kind="resize">.*?<td class="num">2<\/td><td class="num">2<\/td><td class="num">2<\/td><td class="num">0<\/td><td class="num">50\.0%<\/td>/s);
  });
});
