import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { type TestErrand, testErrand } from "../support/db.js";
import { dashboardSession, metric, seedQueue } from "../support/dashboard.js";

let t: TestErrand;
let seeded: Awaited<ReturnType<typeof seedQueue>>;
beforeEach(async () => {
  t = await testErrand();
  seeded = await seedQueue(t.errand);
});
afterEach(() => t.cleanup());

const status = async (id: string) => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]?.status;

describe("dashboard pages", () => {
  it("overview shows the seeded numbers, in total and per kind", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const page = await s.get("/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(metric(page.text, "ready")).toBe("3");
    expect(metric(page.text, "scheduled")).toBe("1");
    expect(metric(page.text, "running")).toBe("0");
    expect(metric(page.text, "done")).toBe("2");
    expect(metric(page.text, "dead")).toBe("3");
    expect(metric(page.text, "throughput")).toBe("2");
    expect(metric(page.text, "failures")).toBe("3");
    expect(metric(page.text, "failure-rate")).toBe("60.0%");
    expect(metric(page.text, "oldest-ready")).toMatch(/^\d+ (ms|s)$/);
    expect(page.text).toMatch(/<tr data-kind="email">.*?<td class="num"><a[^>]*>3<\/a><\/td><td class="num">1<\/td>/s);
    expect(page.text).toContain("2 jobs completed and 3 attempts failed in the last 60 minutes");
  });

  it("lists jobs newest first with kind and status filters and keyset pages", async () => {
    const app = createDashboard(t.errand, { pageSize: 2 });
    const s = dashboardSession(app);
    const ids = (text: string) => [...text.matchAll(/<tr data-job-id="(\d+)">/g)].map((m) => m[1]);
    const first = await s.get("/jobs?kind=email");
    expect(ids(first.text)).toHaveLength(2);
    const older = /href="([^"]+)" rel="next"/.exec(first.text)![1]!.replaceAll("&amp;", "&");
    const second = await s.get(older);
    expect(ids(second.text)).toHaveLength(2);
    expect(second.text).not.toMatch(/rel="next"/);
    const all = [...ids(first.text), ...ids(second.text)];
    expect(new Set(all).size).toBe(4);
    expect(all.map(Number)).toEqual([...all.map(Number)].sort((a, b) => b - a));
    const newer = /href="([^"]+)" rel="prev"/.exec(second.text)![1]!.replaceAll("&amp;", "&");
    expect(ids((await s.get(newer)).text)).toEqual(ids(first.text));
    const dead = await s.get("/jobs?status=dead");
    expect(dead.text).toContain("status-dead");
    expect(dead.text).not.toContain("status-ready");
    expect((await s.get("/jobs?status=bogus")).status).toBe(400);
  });

  it("searches by id and by dedupe key", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const byKey = await s.get("/jobs?q=welcome%3Aa");
    expect([...byKey.text.matchAll(/<tr data-job-id="(\d+)">/g)]).toHaveLength(1);
    const byId = await s.get(`/jobs?q=${seeded.dead[0]}`);
    expect(byId.text).toContain(`data-job-id="${seeded.dead[0]}"`);
    expect((await s.get("/jobs?q=nothing-here")).text).toContain("No job has the id or dedupe key");
  });

  it("shows a job's payload as escaped text and every attempt's error", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const page = await s.get(`/jobs/${seeded.dead[1]}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain("<script>window");
    expect(page.text).toContain("&lt;script&gt;window.__pwned = 1&lt;/script&gt;");
    expect(page.text).toMatch(/<table id="attempts">.*SMTP 421 try later/s);
    expect(page.text).toMatch(/<dt>Attempts<\/dt><dd>1 of 1<\/dd>/);
    expect((await s.get("/jobs/999999")).status).toBe(404);
    // A running job shows its lease holder and how long its lease has left.
    const [running] = await t.sql<{ id: string }>(
      `UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, locked_by = 'web-1:4242:ab12', locked_until = now() + interval '5 minutes', started_at = now()
       WHERE id = (SELECT min(id) FROM ${t.schema}.jobs WHERE status = 'ready') RETURNING id`,
    );
    const lease = await s.get(`/jobs/${running!.id}`);
    expect(lease.text).toContain("<dt>Lease holder</dt><dd>web-1:4242:ab12</dd>");
    expect(lease.text).toMatch(/\((4 min \d+ s|5 min 0 s) left\)/);
    expect((await s.get("/jobs/abc")).status).toBe(400);
  });

  it("shows a job's last progress and its result, escaped, and neither when it has none", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const [id] = await t.sql<{ id: string }>(
      `UPDATE ${t.schema}.jobs SET progress = '{"done": 3, "of": 4}', result = '{"note": "<b>ok</b>"}'
       WHERE id = (SELECT min(id) FROM ${t.schema}.jobs) RETURNING id`,
    );
    const page = await s.get(`/jobs/${id!.id}`);
    expect(page.text).toMatch(/<pre id="progress"[^>]*>[^<]*done&quot;: 3,?\n[^<]*<\/pre>/);
    expect(page.text).toContain("&lt;b&gt;ok&lt;/b&gt;");
    expect(page.text).toMatch(/<pre id="result"/);
    const plain = await s.get(`/jobs/${seeded.dead[1]}`);
    expect(plain.text).not.toContain('id="progress"');
    expect(plain.text).not.toContain('id="result"');
  });
});

describe("dead-letter actions", () => {
  it("groups dead jobs by kind and error", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const page = await s.get("/dead");
    expect(page.text).toMatch(/<td>email_dead<\/td><td class="error">(Error: )?SMTP 421 try later<\/td><td class="num">2<\/td>/);
    expect(page.text).toMatch(/<td>pdf<\/td><td class="error">(Error: )?renderer crashed<\/td><td class="num">1<\/td>/);
  });

  it("confirms, retries selected jobs and reports what changed", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const token = s.token((await s.get("/dead")).text);
    const [a, b] = seeded.dead;
    const confirm = await s.post("/dead/retry", [["_csrf", token], ["id", a!], ["id", b!]]);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain(`Retry 2 dead jobs: ${a}, ${b}?`);
    expect(await status(a!)).toBe("dead");
    const done = await s.post("/dead/retry", [["_csrf", token], ["id", a!], ["id", b!], ["confirm", "yes"]]);
    expect(done.status).toBe(303);
    expect(await status(a!)).toBe("ready");
    expect(await status(b!)).toBe("ready");
    const after = await s.get(done.headers.get("location")!);
    expect(after.text).toContain(`Retried 2 dead jobs: ${a}, ${b}.`);
    expect(after.text).not.toContain(`data-job-id="${a}"`);
  });

  it("retries all of a kind and discards one", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const token = s.token((await s.get("/dead")).text);
    expect((await s.post("/dead/retry", [["_csrf", token], ["kind", "email_dead"]])).text).toContain("Retry all 2 dead jobs of kind email_dead?");
    const done = await s.post("/dead/retry", [["_csrf", token], ["kind", "email_dead"], ["confirm", "yes"]]);
    expect((await s.get(done.headers.get("location")!)).text).toContain("Retried 2 dead jobs of kind email_dead");
    const pdf = seeded.dead[2]!;
    const gone = await s.post("/dead/discard", [["_csrf", token], ["id", pdf], ["confirm", "yes"]]);
    expect((await s.get(gone.headers.get("location")!)).text).toContain(`Discarded 1 dead job: ${pdf}.`);
    expect(await status(pdf)).toBeUndefined();
    // A job that is no longer dead: nothing changes, and the page says so.
    const again = await s.post("/dead/discard", [["_csrf", token], ["id", pdf], ["confirm", "yes"]]);
    expect(again.status).toBe(409);
    expect(again.text).toContain(`no dead job with id ${pdf}`);
  });

  it("refuses a POST without a valid CSRF token, or from another origin", async () => {
    const s = dashboardSession(createDashboard(t.errand));
    const token = s.token((await s.get("/dead")).text);
    const id = seeded.dead[0]!;
    const missing = await s.post("/dead/retry", [["id", id], ["confirm", "yes"]]);
    expect(missing.status).toBe(403);
    const forged = await s.post("/dead/retry", [["_csrf", token.slice(0, -2) + "xx"], ["id", id], ["confirm", "yes"]]);
    expect(forged.status).toBe(403);
    const crossSite = await s.post("/dead/retry", [["_csrf", token], ["id", id], ["confirm", "yes"]], { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    // The token is bound to this browser's cookie: another browser's token does not work.
    const other = dashboardSession(createDashboard(t.errand));
    await other.get("/dead");
    expect((await other.post("/dead/retry", [["_csrf", token], ["id", id], ["confirm", "yes"]])).status).toBe(403);
    expect(await status(id)).toBe("dead");
  });

  it("behind a proxy that rewrites Host, accepts actions from a trusted origin only", async () => {
    const id = seeded.dead[0]!;
    const proxied = { host: "127.0.0.1:4000", origin: "https://ops.example.com" };
    const plain = dashboardSession(createDashboard(t.errand));
    const refused = await plain.post("/dead/retry", [["_csrf", plain.token((await plain.get("/dead")).text)], ["id", id], ["confirm", "yes"]], proxied);
    expect(refused.status).toBe(403);
    expect(await status(id)).toBe("dead");
    const s = dashboardSession(createDashboard(t.errand, { trustedOrigins: ["https://ops.example.com"] }));
    const token = s.token((await s.get("/dead")).text);
    const other = await s.post("/dead/retry", [["_csrf", token], ["id", id], ["confirm", "yes"]], { ...proxied, origin: "https://evil.example" });
    expect(other.status).toBe(403);
    const accepted = await s.post("/dead/retry", [["_csrf", token], ["id", id], ["confirm", "yes"]], proxied);
    expect(accepted.status).toBeLessThan(400);
    expect(await status(id)).toBe("ready");
    expect(() => createDashboard(t.errand, { trustedOrigins: ["ops.example.com"] })).toThrow(/trustedOrigins\[0\]/);
  });

  it("read-only mode hides actions and refuses POSTs", async () => {
    const s = dashboardSession(createDashboard(t.errand, { readOnly: true }));
    const page = await s.get("/dead");
    expect(page.text).toContain("Read-only");
    expect(page.text).not.toContain("<form method=\"post\"");
    expect(page.text).not.toContain("Retry selected");
    const detail = await s.get(`/jobs/${seeded.dead[0]}`);
    expect(detail.text).not.toContain("Retry job");
    const refused = await s.post("/dead/retry", [["id", seeded.dead[0]!], ["confirm", "yes"]]);
    expect(refused.status).toBe(403);
    expect(await status(seeded.dead[0]!)).toBe("dead");
  });
});

describe("dashboard auth and mounting", () => {
  it("requires the token or basic auth when one is configured", async () => {
    const token = "s3cret-token-of-32-characters-xx";
    const app = createDashboard(t.errand, { auth: { token } });
    expect((await app.request("/")).status).toBe(401);
    expect((await app.request("/", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await app.request("/", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const basic = Buffer.from(`anyone:${token}`).toString("base64");
    expect((await app.request("/", { headers: { authorization: `Basic ${basic}` } })).status).toBe(200);
    const userApp = createDashboard(t.errand, { auth: { user: "ops", password: "correct horse battery" } });
    expect((await userApp.request("/", { headers: { authorization: `Basic ${Buffer.from("ops:wrong").toString("base64")}` } })).status).toBe(401);
    expect((await userApp.request("/", { headers: { authorization: `Basic ${Buffer.from("ops:correct horse battery").toString("base64")}` } })).status).toBe(200);
    expect(() => createDashboard(t.errand, { auth: { token: "short" } })).toThrow(/auth\.token/);
  });

  it("serves under a base path with links and assets inside it", async () => {
    const s = dashboardSession(createDashboard(t.errand, { basePath: "/ops/errand" }), "/ops/errand");
    const page = await s.get("/");
    expect(page.status).toBe(200);
    expect(page.text).toContain('href="/ops/errand/assets/dashboard.css"');
    expect(page.text).toContain('href="/ops/errand/dead"');
    expect((await s.get("/assets/dashboard.js")).headers.get("content-type")).toContain("javascript");
    expect((await s.get("/dead")).status).toBe(200);
  });
});

describe("mounting in an existing Node server", () => {
  it("serves /errand/* from the dashboard and everything else from the app (as in the README)", async () => {
    const dashboard = getRequestListener(createDashboard(t.errand, { basePath: "/errand", readOnly: true }).fetch);
    const server = createServer((req, res) => {
      if (req.url === "/errand" || req.url?.startsWith("/errand/")) void dashboard(req, res);
      else res.end("my app");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect(await (await fetch(`${origin}/`)).text()).toBe("my app");
      const overview = await fetch(`${origin}/errand`);
      expect(overview.status).toBe(200);
      expect(await overview.text()).toContain('href="/errand/dead"');
      expect((await fetch(`${origin}/errand/dead`)).status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("schedules page", () => {
  it("lists schedules with next run and policies, and pauses and resumes one", async () => {
    const schedules = t.errand.schedules;
    await schedules.declare([{ name: "nightly-report", cron: "0 2 * * *", timezone: "America/New_York", kind: "send_report", missed: "catch_up", catchUpLimit: 3 }]);
    const s = dashboardSession(createDashboard(t.errand));
    const page = await s.get("/schedules");
    expect(page.text).toMatch(/<tr data-schedule="nightly-report">.*<code>0 2 \* \* \*<\/code>.*America\/New_York.*Active.*<time datetime="[^"]+T0[67]:00:00\.000Z">/s);
    expect(page.text).toContain("missed: catch_up (up to 3)");
    const paused = await s.post("/schedules/pause", [["_csrf", s.token(page.text)], ["name", "nightly-report"]]);
    expect(paused.status).toBe(303);
    const after = await s.get(paused.headers.get("location")!);
    expect(after.text).toContain("Paused schedule nightly-report");
    expect((await schedules.get("nightly-report"))!.paused).toBe(true);
    const resumed = await s.post("/schedules/resume", [["_csrf", s.token(after.text)], ["name", "nightly-report"]]);
    expect((await s.get(resumed.headers.get("location")!)).text).toContain("Resumed schedule nightly-report");
    expect((await schedules.get("nightly-report"))!.paused).toBe(false);
    expect((await s.post("/schedules/pause", [["name", "nightly-report"]])).status).toBe(403);
    expect((await s.post("/schedules/pause", [["_csrf", s.token(after.text)], ["name", "nightly-reprot"]])).text).toContain("did you mean");
    const readOnly = await dashboardSession(createDashboard(t.errand, { readOnly: true })).get("/schedules");
    expect(readOnly.text).toContain("nightly-report");
    expect(readOnly.text).not.toContain("/schedules/pause");
  });
});
