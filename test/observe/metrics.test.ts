import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startMetricsServer, type MetricsServer } from "../../src/observe/metrics-server.js";
import { type TestErrand, eventually, testErrand } from "../support/db.js";

let t: TestErrand;
let server: MetricsServer | undefined;
beforeEach(async () => {
  t = await testErrand();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await t.cleanup();
});

/** Scrapes and parses Prometheus' text format into `name{labels}` → value. */
async function scrape(port: number): Promise<{ contentType: string; samples: Map<string, number>; types: Map<string, string> }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "") continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    expect(sample, `not a valid sample line: ${line}`).not.toBeNull();
    samples.set(`${sample![1]}${sample![2] ?? ""}`, Number(sample![3]));
  }
  return { contentType: res.headers.get("content-type") ?? "", samples, types };
}

describe("metrics endpoint", () => {
  it("serves queue gauges and job counters and histograms in the exposition format", async () => {
    server = await startMetricsServer({ port: 0, host: "127.0.0.1", stats: () => t.errand.stats() });
    await t.errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "k", payload: n })));
    await t.errand.enqueue("k", { n: 4 }, { delay: 3_600_000 });
    await t.errand.enqueue("bad", {});
    const worker = t.errand.worker({
      handlers: { k: async () => {}, bad: async () => { throw new Error("nope"); } },
      onEvent: server.onEvent,
    });
    expect(await worker.runOnce()).toBe(4);
    await t.errand.enqueueMany([{ kind: "k", payload: 5 }, { kind: "k", payload: 6 }]);
    await t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() - interval '2 minutes' WHERE payload = '5'`);

    const { contentType, samples, types } = await scrape(server.port);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(samples.get("errand_stats_up")).toBe(1);
    expect(samples.get('errand_jobs{kind="k",state="ready"}')).toBe(2);
    expect(samples.get('errand_jobs{kind="k",state="scheduled"}')).toBe(1);
    expect(samples.get('errand_jobs{kind="k",state="done"}')).toBe(3);
    expect(samples.get('errand_jobs{kind="bad",state="scheduled"}')).toBe(1);
    expect(samples.get('errand_jobs{kind="bad",state="dead"}')).toBe(0);
    expect(samples.get('errand_oldest_ready_age_seconds{kind="k"}')).toBeGreaterThanOrEqual(120);
    expect(samples.get('errand_recent_outcomes{kind="k",outcome="completed",window="1m"}')).toBe(3);
    expect(samples.get('errand_recent_outcomes{kind="bad",outcome="failed",window="1h"}')).toBe(1);
    expect(samples.get('errand_failure_rate{kind="bad",window="1m"}')).toBe(1);
    expect(samples.get('errand_failure_rate{kind="k",window="1h"}')).toBe(0);
    expect(samples.get('errand_expired_leases{kind="k"}')).toBe(0);

    expect(types.get("errand_jobs_finished_total")).toBe("counter");
    expect(types.get("errand_job_duration_seconds")).toBe("histogram");
    expect(samples.get('errand_jobs_finished_total{kind="k",outcome="done"}')).toBe(3);
    expect(samples.get('errand_jobs_finished_total{kind="bad",outcome="failed"}')).toBe(1);
    expect(samples.get('errand_job_duration_seconds_count{kind="k",outcome="done"}')).toBe(3);
    expect(samples.get('errand_job_duration_seconds_bucket{le="+Inf",kind="k",outcome="done"}')).toBe(3);
    expect(samples.get('errand_job_wait_seconds_count{kind="k"}')).toBe(3);
    expect(samples.get('errand_job_wait_seconds_sum{kind="k"}')).toBeLessThan(60);
    expect(samples.has("process_cpu_user_seconds_total")).toBe(true);
  });

  it("drops kinds that went away and reports a failed stats query as errand_stats_up 0", async () => {
    let fail = false;
    server = await startMetricsServer({ port: 0, host: "127.0.0.1", stats: () => (fail ? Promise.reject(new Error("db down")) : t.errand.stats()) });
    const { id } = await t.errand.enqueue("gone", {});
    expect((await scrape(server.port)).samples.get('errand_jobs{kind="gone",state="ready"}')).toBe(1);
    await t.sql(`DELETE FROM ${t.schema}.jobs WHERE id = $1`, [id]);
    // One stats snapshot serves scrapes for up to a second.
    const port = server.port;
    await eventually(async () => !(await scrape(port)).samples.has('errand_jobs{kind="gone",state="ready"}'), 5_000, "the deleted kind to drop out");
    fail = true;
    await eventually(async () => (await scrape(port)).samples.get("errand_stats_up") === 0, 5_000, "errand_stats_up 0");
    expect((await scrape(port)).samples.has('errand_jobs{kind="gone",state="ready"}')).toBe(false);
  });

  it("answers 404 elsewhere and serves only process metrics without a stats source", async () => {
    server = await startMetricsServer({ port: 0, host: "127.0.0.1" });
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    const { samples } = await scrape(server.port);
    expect(samples.has("errand_stats_up")).toBe(false);
    server.onEvent({ type: "rescued", ready: 2, dead: 1 });
    server.onEvent({ type: "error", during: "claim", error: new Error("x") });
    const after = (await scrape(server.port)).samples;
    expect(after.get('errand_jobs_rescued_total{to="ready"}')).toBe(2);
    expect(after.get('errand_jobs_rescued_total{to="dead"}')).toBe(1);
    expect(after.get('errand_worker_errors_total{during="claim"}')).toBe(1);
  });
});
