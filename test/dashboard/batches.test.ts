import { describe, expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { useTestErrand } from "../support/db.js";
import { dashboardSession } from "../support/dashboard.js";

const t = useTestErrand();

describe("dashboard batches", () => {
  it("lists batches newest first by state, in pages, and links each to its page", async () => {
    const a = await t.errand.batch({ jobs: [{ kind: "resize", payload: {} }], then: { kind: "album_ready" } });
    const b = await t.errand.batch({ jobs: [{ kind: "resize", payload: {} }], then: { kind: "album_ready" } });
    const c = await t.errand.batch({ jobs: [{ kind: "resize", payload: {} }], then: { kind: "album_ready" } });
    await t.errand.cancel({ ids: a.jobIds });
    const s = dashboardSession(createDashboard(t.errand, { pageSize: 2 }));
    const ids = (text: string) => [...text.matchAll(/<tr data-batch-id="(\d+)">/g)].map((m) => m[1]);
    const first = await s.get("/batches");
    expect(first.status).toBe(200);
    expect(first.text).toContain('aria-current="page">Batches</a>');
    expect(ids(first.text)).toEqual([c.batchId, b.batchId]);
    const older = /href="([^"]+)" rel="next"/.exec(first.text)![1]!.replaceAll("&amp;", "&");
    expect(ids((await s.get(older)).text)).toEqual([a.batchId]);
    const finished = await s.get("/batches?status=finished");
    expect(ids(finished.text)).toEqual([a.batchId]);
    expect(finished.text).toMatch(/album_ready \(<a href="\/jobs\/\d+">job \d+<\/a>\)/);
    expect((await s.get("/batches?status=done")).status).toBe(400);
  });

  it("shows one batch: counts, failed members, callback and members; the job page links to it; an unknown batch is a 404", async () => {
    const { batchId, jobIds } = await t.errand.batch({
      jobs: [
        { kind: "resize", payload: { n: 1 } },
        { kind: "resize", payload: { n: 2 } },
        { kind: "resize", payload: { n: 3 } },
      ],
      then: { kind: "album_ready", payload: { albumId: 7 } },
    });
    await t.errand.cancel({ ids: [jobIds[1]!] });
    const s = dashboardSession(createDashboard(t.errand, { pageSize: 2 }));
    const page = await s.get(`/batches/${batchId}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<h1>Batch ${batchId} <small class="muted">then album_ready</small></h1>`);
    expect(page.text).toContain("<dt>Cancelled</dt><dd>1</dd>");
    expect(page.text).toContain("<dt>Unfinished</dt><dd>2</dd>");
    expect(page.text).toContain(`<dt>Failed members</dt><dd><a href="/jobs/${jobIds[1]}">${jobIds[1]}</a></dd>`);
    expect(page.text).toContain("(enqueued when every member has finished)");
    expect(page.text).toContain("&quot;albumId&quot;: 7");
    const members = (text: string) => [...text.matchAll(/<tr data-job-id="(\d+)">/g)].map((m) => m[1]);
    expect(members(page.text)).toEqual(jobIds.slice(0, 2));
    const more = /href="([^"]+)" rel="next"/.exec(page.text)![1]!.replaceAll("&amp;", "&");
    expect(members((await s.get(more)).text)).toEqual([jobIds[2]]);
    expect((await s.get(`/jobs/${jobIds[0]}`)).text).toContain(`<dt>Batch</dt><dd><a href="/batches/${batchId}">batch ${batchId}</a></dd>`);
    const { id: alone } = await t.errand.enqueue("resize", {});
    expect((await s.get(`/jobs/${alone}`)).text).not.toContain("<dt>Batch</dt>");
    expect((await s.get("/batches/999")).status).toBe(404);
    expect((await s.get("/batches/x")).status).toBe(400);
  });
});
