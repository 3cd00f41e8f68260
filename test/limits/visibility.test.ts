import { afterEach, expect, it } from "vitest";
import { createDashboard } from "../../src/dashboard/index.js";
import { startMetricsServer, type MetricsServer } from "../../src/observe/metrics-server.js";
import { dashboardSession } from "../support/dashboard.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand();
let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("stats, metrics and the dashboard show running vs limit per queue and per key, and the jobs a rate holds back", async () => {
  await t.errand.limits.setQueue("email", { concurrency: 10 });
  await t.errand.limits.set("api", { concurrency: 5, rate: "2/hour" }); // an hour: the test's pace cannot matter
  await t.errand.enqueueMany(Array.from({ length: 5 }, () => ({ kind: "call", concurrencyKey: "api" })));
  await t.errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "send", queue: "email" })));
  // Two of api's jobs start (its rate for the hour), through the claims a worker makes.
  await t.sql(`SELECT * FROM ${t.schema}.claim_keyed(10, 'w1', '{}', 60000, NULL, 'default', ARRAY['call'])`);
  await t.sql(`SELECT * FROM ${t.schema}.claim_limited(1, 'w1', '{}', 60000, NULL, 'email', ARRAY['send'])`);

  const stats = await t.errand.stats();
  expect(stats.queues.email).toEqual({ ready: 2, scheduled: 0, running: 1, paused: false, limit: 10 });
  expect(stats.queues.default).toMatchObject({ running: 2, limit: null });
  expect(stats.limits).toEqual([{ key: "api", concurrency: 5, rate: { count: 2, periodMs: 3_600_000 }, running: 2, ready: 3, rateHeld: 3 }]);

  server = await startMetricsServer({ port: 0, host: "127.0.0.1", stats: () => t.errand.stats() });
  const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  expect(text).toContain('errand_queue_limit{queue="email"} 10');
  expect(text).toContain('errand_limit_jobs{key="api",state="running"} 2');
  expect(text).toContain('errand_limit_jobs{key="api",state="rate_held"} 3');
  expect(text).toContain('errand_limit_concurrency{key="api"} 5');
  expect(text).toContain('errand_unserved_jobs{queue="email",kind="send"} 2'); // no worker runs at all here

  const page = await dashboardSession(createDashboard(t.errand)).get("/");
  expect(page.text).toMatch(/<tr data-queue="email"><th scope="row">email<\/th>\s*<td class="num">2<\/td><td class="num">0<\/td><td class="num">1<\/td><td class="num">10<\/td>/);
  expect(page.text).toMatch(/<tr data-limit="api"><th scope="row">api<\/th>\s*<td class="num">2<\/td><td class="num">5<\/td>\s*<td>2 per 3,600,000 ms<\/td>\s*<td class="num">3<\/td><td class="num"><strong>3<\/strong><\/td>/);
});
