import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { type BrowserContext, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { type TestErrand, testErrand } from "../support/db.js";
import { seedQueue } from "../support/dashboard.js";
import { chromiumPath } from "../support/services.js";

// End to end in Debian's Chromium (apt-get install chromium; .ci/browser does it in CI).
// Without it vitest.config.ts leaves this file out, saying so (and fails under CI).
const artifacts = join(process.cwd(), "test-artifacts");
mkdirSync(artifacts, { recursive: true });

let context: BrowserContext;
let profile: string;
let t: TestErrand;
let seeded: Awaited<ReturnType<typeof seedQueue>>;
let server: ReturnType<typeof serve>;
let origin: string;
let page: Page;
let outside: string[];
/** Origins the page may load from: the dashboard's, and in one test an attacker's page. */
let allowed: string[];

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), "errand-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 900 },
  });
});
afterAll(async () => {
  await context?.close();
  rmSync(profile, { recursive: true, force: true });
});

beforeEach(async () => {
  t = await testErrand();
  seeded = await seedQueue(t.errand);
  const app = createDashboard(t.errand);
  server = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  page = await context.newPage();
  outside = [];
  allowed = [origin];
  page.on("request", (request) => {
    if (!allowed.some((o) => request.url().startsWith(o))) outside.push(request.url());
  });
});
afterEach(async () => {
  await page.close();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    if ("closeAllConnections" in server) server.closeAllConnections();
  });
  await t.cleanup();
  // The dashboard serves its own assets: nothing may be fetched from anywhere else.
  expect(outside).toEqual([]);
});

const shot = (name: string) => page.screenshot({ path: join(artifacts, name), fullPage: true });
const metric = (name: string) => page.locator(`[data-metric="${name}"] dd`).textContent();

describe("dashboard in Chromium", () => {
  it("shows the seeded numbers on the overview, light, dark and narrow", async () => {
    const response = await page.goto(`${origin}/`);
    expect(response?.status()).toBe(200);
    await expect.poll(() => page.title()).toBe("Overview · errand");
    expect(await metric("ready")).toBe("3");
    expect(await metric("scheduled")).toBe("1");
    expect(await metric("running")).toBe("0");
    expect(await metric("done")).toBe("2");
    expect(await metric("dead")).toBe("3");
    expect(await metric("throughput")).toBe("2");
    expect(await metric("failures")).toBe("3");
    expect(await metric("failure-rate")).toBe("60.0%");
    expect(await page.locator('#kinds tr[data-kind="email"] td').first().textContent()).toBe("3");
    expect(await page.locator("svg[role=img] rect.bar-done").count()).toBeGreaterThan(0);
    // The script loaded and added its control (progressive enhancement).
    await page.getByRole("button", { name: "Pause auto-refresh" }).waitFor();
    // Background colour follows the colour scheme.
    const background = () => page.evaluate("getComputedStyle(document.documentElement).backgroundColor");
    const light = await background();
    await shot("overview-light.png");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await background()).not.toBe(light);
    await shot("overview-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 390, height: 844 });
    await shot("overview-mobile.png");
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it("refreshes the overview by itself", async () => {
    await page.goto(`${origin}/?`);
    expect(await metric("ready")).toBe("3");
    await t.errand.enqueue("email", { to: "new@example.com" });
    await expect.poll(() => metric("ready"), { timeout: 15_000 }).toBe("4");
  });

  it("filters jobs, searches by dedupe key and opens a job", async () => {
    await page.goto(`${origin}/jobs`);
    await page.getByLabel("Kind").selectOption("email");
    await page.getByLabel("Status").selectOption("ready");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/kind=email/);
    expect(await page.locator("tr[data-job-id]").count()).toBe(4);
    await shot("jobs-filtered.png");
    await page.getByLabel("Id or dedupe key").fill("welcome:a");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/q=welcome/);
    expect(await page.locator("tr[data-job-id]").count()).toBe(1);
    await page.locator("tr[data-job-id] a").first().click();
    await page.waitForURL(/\/jobs\/\d+$/);
    expect(await page.locator("#payload").textContent()).toBe('{\n  "to": "a@example.com"\n}');
  });

  it("shows a <script> payload as inert text", async () => {
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${origin}/jobs/${seeded.dead[1]}`);
    expect(await page.locator("#payload").textContent()).toContain('<script>window.__pwned = 1</script><img src=x onerror=\\"window.__pwned=2\\">');
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
    expect(await page.locator("#payload script, #payload img").count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(await page.locator("#attempts").textContent()).toContain("SMTP 421 try later");
    await shot("job-detail-dead-script-payload.png");
  });

  it("retries a dead job from its page and it leaves the dead list", async () => {
    const id = seeded.dead[0]!;
    await page.goto(`${origin}/dead`);
    await shot("dead-letters.png");
    expect(await page.locator(`#dead-list tr[data-job-id="${id}"]`).count()).toBe(1);
    await page.locator(`#dead-list tr[data-job-id="${id}"] a`).click();
    await page.waitForURL(new RegExp(`/jobs/${id}$`));
    await page.getByRole("button", { name: `Retry job ${id}` }).click();
    await page.waitForURL(/\/dead\/retry$/);
    expect(await page.locator("#confirm-question").textContent()).toBe(`Retry dead job ${id}?`);
    await shot("dead-retry-confirm.png");
    await page.getByRole("button", { name: "Yes, retry" }).click();
    await page.waitForURL(new RegExp(`/jobs/${id}\\?done=retry$`));
    expect(await page.getByRole("status").textContent()).toContain(`Retried job ${id}`);
    await shot("job-detail-after-retry.png");
    await page.getByRole("link", { name: "Dead letters" }).click();
    await page.waitForURL(/\/dead$/);
    expect(await page.locator(`tr[data-job-id="${id}"]`).count()).toBe(0);
    expect(await page.locator("tr[data-job-id]").count()).toBe(2);
    const [row] = await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]);
    expect(row!.status).toBe("ready");
  });

  it("retries selected dead jobs from the list and reports what changed", async () => {
    const [a, b, c] = seeded.dead;
    await page.goto(`${origin}/dead`);
    await page.getByLabel(`Select job ${a}`).check();
    await page.getByLabel(`Select job ${c}`).check();
    await page.getByRole("button", { name: "Retry selected" }).click();
    expect(await page.locator("#confirm-question").textContent()).toBe(`Retry 2 dead jobs: ${a}, ${c}?`);
    await page.getByRole("button", { name: "Yes, retry" }).click();
    await page.waitForURL(/done=retry/);
    expect(await page.getByRole("status").textContent()).toContain(`Retried 2 dead jobs: ${a}, ${c}.`);
    expect(await page.locator("#dead-list tr[data-job-id]").count()).toBe(1);
    expect(await page.locator(`#dead-list tr[data-job-id="${b}"]`).count()).toBe(1);
    await shot("dead-letters-after-retry.png");
  });

  it("refuses a form posted without its CSRF token, and nothing changes", async () => {
    const id = seeded.dead[2]!;
    await page.goto(`${origin}/dead`);
    await page.evaluate("document.querySelectorAll('input[name=_csrf]').forEach((input) => input.remove())");
    await page.getByLabel(`Select job ${id}`).check();
    const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.getByRole("button", { name: "Discard selected" }).click()]);
    expect(response.status()).toBe(403);
    await page.waitForURL(/\/dead\/discard$/);
    expect(await page.getByRole("alert").textContent()).toContain("security token is missing");
    await shot("csrf-refused.png");
    // Also from script: a POST with no token at all.
    const status = await page.evaluate(`fetch("/dead/discard", { method: "POST", body: new URLSearchParams({ id: "${id}", confirm: "yes" }) }).then((r) => r.status)`);
    expect(status).toBe(403);
    const [row] = await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]);
    expect(row!.status).toBe("dead");
  });

  it("cancels a scheduled job from its page after a confirmation; a finished one shows why nothing changed", async () => {
    const [job] = await t.sql<{ id: string }>(`SELECT id::text FROM ${t.schema}.all_jobs WHERE kind = 'email' AND run_at > now()`);
    const id = job!.id;
    await page.goto(`${origin}/jobs/${id}`);
    await page.getByRole("button", { name: `Cancel job ${id}` }).click();
    await page.waitForURL(/\/jobs\/cancel$/);
    expect(await page.locator("#confirm-question").textContent()).toBe(`Cancel job ${id}?`);
    await shot("job-cancel-confirm.png");
    await page.getByRole("button", { name: "Yes, cancel" }).click();
    await page.waitForURL(new RegExp(`/jobs/${id}\\?done=cancel$`));
    expect(await page.getByRole("status").textContent()).toContain(`Cancelled 1 job: ${id}.`);
    expect(await page.locator(".status-cancelled").first().textContent()).toBe("cancelled");
    expect(await page.getByRole("button", { name: `Cancel job ${id}` }).count()).toBe(0);
    await shot("job-detail-after-cancel.png");
    // A ready job's page, then the job finishes before the confirmation is sent.
    const [ready] = await t.sql<{ id: string }>(`SELECT min(id)::text AS id FROM ${t.schema}.all_jobs WHERE kind = 'email' AND status = 'ready'`);
    await page.goto(`${origin}/jobs/${ready!.id}`);
    await page.getByRole("button", { name: `Cancel job ${ready!.id}` }).click();
    await page.waitForURL(/\/jobs\/cancel$/);
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'done', finished_at = now() WHERE id = $1`, [ready!.id]);
    const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.getByRole("button", { name: "Yes, cancel" }).click()]);
    expect(response.status()).toBe(409);
    expect(await page.getByRole("alert").textContent()).toContain(`cannot cancel job ${ready!.id} (done): already finished`);
    const [row] = await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [ready!.id]);
    expect(row!.status).toBe("done");
  });

  it("pauses a schedule", async () => {
    const schedules = t.errand.schedules;
    await schedules.declare([
      { name: "nightly-report", cron: "0 2 * * *", timezone: "America/New_York", kind: "send_report" },
      { name: "sweep", cron: "*/5 * * * *", kind: "sweep", overlap: "allow", missed: "catch_up", catchUpLimit: 3 },
    ]);
    await page.goto(`${origin}/schedules`);
    await page.getByRole("button", { name: "Pause nightly-report" }).click();
    await page.waitForURL(/done=pause/);
    expect(await page.getByRole("status").textContent()).toContain("Paused schedule nightly-report");
    expect(await page.locator('tr[data-schedule="nightly-report"] td').nth(2).textContent()).toBe("Paused");
    await page.getByRole("button", { name: "Resume nightly-report" }).waitFor();
    await shot("schedules.png");
  });

  it("refuses a cross-origin form post even with a valid token (another port is another origin)", async () => {
    const id = seeded.dead[0]!;
    await page.goto(`${origin}/dead`);
    const token = await page.locator("input[name=_csrf]").first().getAttribute("value");
    // An attacker's page on another port of the same host: same site, so the SameSite
    // cookie is sent; the Origin check is what stops it.
    const { Hono } = await import("hono");
    const evil = new Hono().get("/", (c) => c.html(`<form id="f" method="post" action="${origin}/dead/retry"><input name="_csrf" value="${token}"><input name="id" value="${id}"><input name="confirm" value="yes"></form><script>document.getElementById("f").submit()</script>`));
    const evilServer = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: evil.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    const evilOrigin = `http://127.0.0.1:${(evilServer.address() as AddressInfo).port}`;
    allowed.push(evilOrigin);
    try {
      const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST", { timeout: 15_000 }), page.goto(evilOrigin)]);
      expect(response.status()).toBe(403);
      expect(await page.getByRole("alert").textContent()).toContain("came from another site");
    } finally {
      await new Promise((resolve) => {
        evilServer.close(resolve);
        if ("closeAllConnections" in evilServer) evilServer.closeAllConnections();
      });
    }
    const [row] = await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]);
    expect(row!.status).toBe("dead");
  });
});
