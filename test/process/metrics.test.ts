import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

describe("`errand worker --metrics-port`", () => {
  it("serves queue gauges and this worker's job metrics on /metrics, and liveness on /healthz", async () => {
    const [first] = await t.errand.enqueueMany([{ kind: "record", payload: { ms: 0 } }, { kind: "later", payload: {}, delay: 3_600_000 }]);
    const worker = t.worker("w", ["--metrics-port", "0"]);
    const listening = await worker.waitForLog((l) => l.event === "metrics_listening", 15_000, "the metrics server");
    expect(listening.host).toBe("127.0.0.1"); // /metrics has no authentication: loopback unless --metrics-host says otherwise
    await t.started(first!.id, worker);
    const scrape = async () => (await fetch(`http://127.0.0.1:${String(listening.port)}/metrics`)).text();
    const text = await eventually(async () => {
      const body = await scrape();
      return /errand_jobs_finished_total\{kind="record",outcome="done"\} 1/.test(body) ? body : undefined;
    }, 10_000, "the finished-jobs counter");
    expect(text).toMatch(/^errand_jobs\{kind="later",state="scheduled"\} 1$/m);
    expect(text).toMatch(/^errand_job_duration_seconds_count\{kind="record",outcome="done"\} 1$/m);
    expect(text).toMatch(/^errand_job_wait_seconds_count\{kind="record"\} 1$/m);
    const health = await fetch(`http://127.0.0.1:${String(listening.port)}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok", maxEventLoopLagMs: 1000, workers: { running: 1, stopped: 0 } });
    expect(await worker.kill("SIGTERM")).toEqual({ code: 0, signal: null });
  });
});
