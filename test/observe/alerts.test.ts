import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PermanentError } from "../../src/index.js";
import { type Alert, Alerter, type Notifier, evaluateRules } from "../../src/observe/alerts.js";
import { memoryIncidents, tableIncidents } from "../../src/observe/incidents.js";
import { telegramNotifier, webhookNotifier } from "../../src/observe/notifiers.js";
import type { KindStats, QueueStats } from "../../src/observe/stats.js";
import { type TestErrand, testErrand } from "../support/db.js";

let t: TestErrand;
let server: Server | undefined;
beforeEach(async () => {
  t = await testErrand();
});
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await t.cleanup();
});

function fakeNotifier(): Notifier & { alerts: Alert[]; failNext: number } {
  const notifier = {
    alerts: [] as Alert[],
    failNext: 0,
    async notify(alert: Alert) {
      if (notifier.failNext > 0) {
        notifier.failNext--;
        throw new Error("channel down");
      }
      notifier.alerts.push(alert);
    },
  };
  return notifier;
}

/** A local HTTP server recording each request's path and JSON body. */
async function recorder(reply: (path: string) => { status: number; body: unknown }): Promise<{ url: string; requests: { path: string; body: Record<string, unknown> }[] }> {
  const requests: { path: string; body: Record<string, unknown> }[] = [];
  server = createServer((req, res) => {
    let data = "";
    req.on("data", (chunk: Buffer) => (data += chunk.toString()));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", body: JSON.parse(data) as Record<string, unknown> });
      const { status, body } = reply(req.url ?? "");
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

async function killOneJob(kind = "email"): Promise<void> {
  await t.errand.enqueue(kind, {});
  await t.errand.worker({ handlers: { [kind]: async () => { throw new PermanentError("bad address"); } } }).runOnce();
}

describe("alerts", () => {
  it("fires once for a dead job and resolves once when it is retried", async () => {
    const notifier = fakeNotifier();
    const alerter = new Alerter({ stats: () => t.errand.stats(), notifiers: [notifier], store: tableIncidents(t.errand.driver, t.schema) });
    expect(await alerter.runOnce()).toEqual([]);
    await killOneJob();
    const [fired] = await alerter.runOnce();
    expect(fired).toMatchObject({ status: "firing", rule: "dead_jobs", kind: "email", key: "dead_jobs:email" });
    expect(fired!.message).toBe("1 dead job of kind 'email' waits for a person: errand dead list --kind email");
    // Still dead, and another one dies: same incident, no new notification.
    expect(await alerter.runOnce()).toEqual([]);
    await killOneJob();
    expect(await alerter.runOnce()).toEqual([]);
    await t.errand.dead.retry({ kind: "email" });
    const [resolved] = await alerter.runOnce();
    expect(resolved).toMatchObject({ status: "resolved", rule: "dead_jobs", kind: "email" });
    expect(resolved!.message).toMatch(/^resolved: 1 dead job of kind 'email'/);
    expect(resolved!.openedAt.getTime()).toBeLessThanOrEqual(resolved!.at.getTime());
    expect(await alerter.runOnce()).toEqual([]);
    expect(notifier.alerts.map((a) => a.status)).toEqual(["firing", "resolved"]);
  });

  it("fires each incident once across two alerting processes sharing the incidents table", async () => {
    const [n1, n2] = [fakeNotifier(), fakeNotifier()];
    const make = (n: Notifier) => new Alerter({ stats: () => t.errand.stats(), notifiers: [n], store: tableIncidents(t.errand.driver, t.schema) });
    const [a1, a2] = [make(n1), make(n2)];
    await killOneJob();
    await Promise.all([a1.runOnce(), a2.runOnce()]);
    await Promise.all([a1.runOnce(), a2.runOnce()]);
    expect(n1.alerts.length + n2.alerts.length).toBe(1);
    await t.errand.dead.discard({ all: true });
    await Promise.all([a1.runOnce(), a2.runOnce()]);
    expect([...n1.alerts, ...n2.alerts].map((a) => a.status).sort()).toEqual(["firing", "resolved"]);
  });

  it("tries an undelivered notification again at the next check", async () => {
    const notifier = fakeNotifier();
    const errors: unknown[] = [];
    const alerter = new Alerter({ stats: () => t.errand.stats(), notifiers: [notifier], onError: (e) => errors.push(e) });
    await killOneJob();
    notifier.failNext = 1;
    expect(await alerter.runOnce()).toEqual([]);
    expect(String(errors[0])).toContain("channel down");
    expect((await alerter.runOnce()).map((a) => a.status)).toEqual(["firing"]);
    expect(await alerter.runOnce()).toEqual([]);
  });

  it("posts firing and resolved alerts to a webhook", async () => {
    const hook = await recorder(() => ({ status: 204, body: null }));
    const alerter = new Alerter({ stats: () => t.errand.stats(), notifiers: [webhookNotifier({ url: `${hook.url}/hooks/errand`, headers: { authorization: "Bearer x" } })] });
    await killOneJob("resize");
    await alerter.runOnce();
    await alerter.runOnce();
    await t.errand.dead.discard({ kind: "resize" });
    await alerter.runOnce();
    expect(hook.requests.map((r) => [r.path, r.body.status, r.body.rule, r.body.kind])).toEqual([
      ["/hooks/errand", "firing", "dead_jobs", "resize"],
      ["/hooks/errand", "resolved", "dead_jobs", "resize"],
    ]);
    expect(typeof hook.requests[0]!.body.openedAt).toBe("string");
  });

  it("sends Telegram messages through the Bot API, and treats a refusal as undelivered", async () => {
    let ok = true;
    const api = await recorder(() => (ok ? { status: 200, body: { ok: true, result: {} } } : { status: 403, body: { ok: false, description: "bot was blocked" } }));
    const errors: unknown[] = [];
    const alerter = new Alerter({ stats: () => t.errand.stats(), notifiers: [telegramNotifier({ token: "123:abc-DEF", chatId: -1001, apiUrl: api.url })], store: memoryIncidents(), onError: (e) => errors.push(e) });
    await killOneJob();
    ok = false;
    expect(await alerter.runOnce()).toEqual([]);
    expect(String(errors[0])).toMatch(/bot\*\*\*\/sendMessage answered 403/);
    expect(String(errors[0])).not.toContain("abc-DEF");
    ok = true;
    expect(await alerter.runOnce()).toHaveLength(1);
    expect(api.requests.at(-1)).toEqual({ path: "/bot123:abc-DEF/sendMessage", body: { chat_id: -1001, text: "🔴 errand firing: 1 dead job of kind 'email' waits for a person: errand dead list --kind email", disable_web_page_preview: true } });
    expect(() => telegramNotifier({ token: "nope", chatId: 1 })).toThrow(/token: must be a Telegram bot token/);
  });
});

describe("alert rules", () => {
  const window = (completed: number, failed: number) => ({ completed, failed, died: 0, timedOut: 0, cancelled: 0, failureRate: completed + failed ? failed / (completed + failed) : null });
  const kind = (s: Partial<KindStats>): KindStats => ({ ready: 0, scheduled: 0, running: 0, done: 0, dead: 0, cancelled: 0, oldestReadyAgeMs: null, expiredLeases: 0, lastMinute: window(0, 0), lastHour: window(0, 0), ...s });
  const stats = (kinds: Record<string, KindStats>): QueueStats => ({ at: new Date(0), total: kind({}), kinds, queues: {}, pausedKinds: [], limits: [], unserved: [] });

  it("has sensible defaults: oldest ready over 15 minutes, failure rate over 25% with at least 20 attempts", () => {
    const found = evaluateRules(stats({
      slow: kind({ ready: 40, oldestReadyAgeMs: 16 * 60_000 }),
      fine: kind({ ready: 40, oldestReadyAgeMs: 14 * 60_000, lastHour: window(100, 25) }),
      flaky: kind({ lastHour: window(60, 40) }),
      rare: kind({ lastHour: window(5, 10) }),
    }));
    expect([...found.keys()]).toEqual(["oldest_ready:slow", "failure_rate:flaky"]);
    expect(found.get("oldest_ready:slow")!.message).toBe("the oldest ready job of kind 'slow' has waited 16 min (limit 15 min; 40 ready, 0 running)");
    expect(found.get("failure_rate:flaky")!.message).toBe("40% of attempts of kind 'flaky' failed in the last hour (40 of 100; limit 25%)");
  });

  it("takes custom thresholds, turns rules off, and names a bad option", () => {
    const s = stats({ k: kind({ dead: 2, oldestReadyAgeMs: 61_000, lastHour: window(1, 1) }) });
    expect([...evaluateRules(s, { oldestReadyMs: 60_000, failureRate: { threshold: 0.4, minAttempts: 2 } }).keys()]).toEqual(["dead_jobs:k", "oldest_ready:k", "failure_rate:k"]);
    expect([...evaluateRules(s, { deadJobs: false, oldestReadyMs: false, failureRate: false }).keys()]).toEqual([]);
    expect(() => evaluateRules(s, { failureRate: { threshold: 2 } })).toThrow(/rules.failureRate.threshold/);
    expect(() => new Alerter({ stats: async () => s, notifiers: [], rules: {} })).toThrow(/notifiers: give at least one notifier/);
  });
});
