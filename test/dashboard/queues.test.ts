import { describe, expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { dashboardSession } from "../support/dashboard.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand();

describe("dashboard: queues", () => {
  it("shows each queue's depth and state, and pauses and resumes a queue or a kind (CSRF-checked)", async () => {
    await t.errand.enqueueMany([{ kind: "mail", queue: "email" }, { kind: "mail", queue: "email" }, { kind: "k" }]);
    const s = dashboardSession(createDashboard(t.errand));
    const page = await s.get("/");
    expect(page.text).toMatch(/<tr data-queue="email"><th scope="row">email<\/th>\s*<td class="num">2<\/td><td class="num">0<\/td><td class="num">0<\/td><td class="num">—<\/td>\s*<td>Active<\/td>/);
    expect(page.text).toMatch(/<tr data-queue="default">/);

    // Without the form's token: refused, nothing paused.
    expect((await s.post("/queues/pause", [["queue", "email"]])).status).toBe(403);
    expect(await t.errand.paused()).toEqual({ queues: [], kinds: [] });

    const paused = await s.post("/queues/pause", [["_csrf", s.token(page.text)], ["queue", "email"]]);
    expect(paused.status).toBe(303);
    const after = await s.get(paused.headers.get("location")!);
    expect(after.text).toContain("Paused queue email");
    expect(after.text).toMatch(/<tr data-queue="email">.*?<strong>Paused<\/strong>.*?Resume<span class="sr-only"> queue email<\/span>/s);
    expect((await t.errand.paused()).queues.map((q) => q.name)).toEqual(["email"]);

    const kind = await s.post("/queues/pause", [["_csrf", s.token(after.text)], ["kind", "mail"]]);
    const withKind = await s.get(kind.headers.get("location")!);
    expect(withKind.text).toContain("Paused kind mail");
    expect(withKind.text).toMatch(/<li data-paused-kind="mail">mail <form[^>]*action="\/queues\/resume"/);

    const resumed = await s.post("/queues/resume", [["_csrf", s.token(withKind.text)], ["queue", "email"]]);
    expect((await s.get(resumed.headers.get("location")!)).text).toContain("Resumed queue email");
    await s.post("/queues/resume", [["_csrf", s.token(withKind.text)], ["kind", "mail"]]);
    expect(await t.errand.paused()).toEqual({ queues: [], kinds: [] });

    // Bad input names the field; nothing changes.
    const bad = await s.post("/queues/pause", [["_csrf", s.token(withKind.text)], ["queue", "no spaces"]]);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("queue: must be a queue name");
    const both = await s.post("/queues/pause", [["_csrf", s.token(withKind.text)], ["queue", "a"], ["kind", "b"]]);
    expect(both.status).toBe(400);
    expect(await t.errand.paused()).toEqual({ queues: [], kinds: [] });

    const readOnly = await dashboardSession(createDashboard(t.errand, { readOnly: true })).get("/");
    expect(readOnly.text).toContain('data-queue="email"');
    expect(readOnly.text).not.toContain("/queues/pause");
  });
});
