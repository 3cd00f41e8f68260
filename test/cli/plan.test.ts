import { Command } from "commander";
import { afterEach, describe, expect, it, vi } from "vitest";
import { register } from "../../src/cli/plan.js";
import { capacity, capacityPlanText, parseRate, retryPlanText, retrySchedule } from "../../src/planning.js";
import { defaultRetryPolicy } from "../../src/defaults.js";

// Copied verbatim from the seed article ("Worked example: how many retries are enough?").
const seedTable = `Failure #	Wait	Cumulative
1	30 s	30 s
2	60 s	1.5 min
3	120 s	3.5 min
4	240 s	7.5 min
5	480 s	15.5 min
6	960 s	31.5 min
7	1,920 s	63.5 min`;
const seedLastAttempt = "max_attempts = 8: attempt 8 runs at 3,810 seconds ≈ 63.5 minutes. Even if jitter rolls the minimum (×0.5) every time, that is ≈ 31.75 minutes";
const seedWorkers = "600 × 8 = 4,800 seconds of work per hour ÷ 3,600 = 1.33 workers, so at least 2.";
const seedBurst = "If 300 jobs arrive at once and 4 workers run, the queue clears in 300 × 8 ÷ 4 = 600 seconds = 10 minutes. Check that the API's rate limit allows 4 concurrent calls.";

/** Runs `errand plan …` through commander, returning what it printed. */
async function plan(...args: string[]): Promise<string> {
  const program = new Command("errand").exitOverride();
  register(program);
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(["node", "errand", "plan", ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe("errand plan", () => {
  it("prints the seed's retry table and last-attempt sentence for the seed's policy", async () => {
    const out = await plan("--base", "30s", "--cap", "1h", "--factor", "2", "--jitter", "0.5", "--max-attempts", "8");
    expect(out).toContain(`\n${seedTable}\n`);
    expect(out).toContain(seedLastAttempt);
    // The defaults are the seed's policy.
    expect(await plan()).toBe(out);
  });

  it("prints min and max with jitter", async () => {
    const out = await plan("--max-attempts", "8");
    expect(out).toContain("Failure #\tWait min\tWait max\tCumulative min\tCumulative max\n1\t15 s\t30 s\t15 s\t30 s\n");
    expect(out).toContain("\n7\t960 s\t1,920 s\t31.75 min\t63.5 min\n");
  });

  it("says whether the last attempt outlives an outage (seed: 5 attempts fail a 20-minute outage, 8 survive it)", async () => {
    expect(await plan("--max-attempts", "5", "--outage", "20m")).toContain("max_attempts = 5: attempt 5 runs at 450 seconds ≈ 7.5 minutes.");
    expect(await plan("--max-attempts", "5", "--outage", "20m")).toContain("Attempt 5 runs while a 20-minute outage is still on, and every job goes dead.");
    expect(await plan("--max-attempts", "8", "--outage", "20m")).toContain("safely past a 20-minute outage, even at minimum jitter");
    expect(await plan("--max-attempts", "7", "--outage", "20m")).toContain("only if jitter rolls high");
  });

  it("prints the seed's capacity arithmetic", async () => {
    const out = await plan("--rate", "600/h", "--duration", "8s", "--burst", "300", "--workers", "4");
    expect(out).toBe(`${seedWorkers}\n${seedBurst}\n`);
    expect(await plan("--rate", "10/min", "--duration", "8")).toBe(`${seedWorkers}\n`);
  });

  it("drains a burst with the minimum workers when --workers is not given", () => {
    expect(capacity({ jobsPerHour: 600, durationMs: 8000, burst: 300 })).toEqual({ workers: 600 * 8 / 3600, minWorkers: 2, burstClearMs: 1_200_000 });
    expect(capacityPlanText({ jobsPerHour: 3600, durationMs: 1000, burst: 10 })).toBe(
      "3,600 × 1 = 3,600 seconds of work per hour ÷ 3,600 = 1 workers, so at least 1.\nIf 10 jobs arrive at once and 1 workers run, the queue clears in 10 × 1 ÷ 1 = 10 seconds. Check that the API's rate limit allows 1 concurrent calls.\n",
    );
  });

  it("caps waits at the policy's cap", () => {
    const rows = retrySchedule(defaultRetryPolicy, 10);
    expect(rows.map((r) => r.waitMs / 1000)).toEqual([30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
    expect(retryPlanText({ policy: { jitter: 0 }, maxAttempts: 3 })).not.toContain("With jitter");
    expect(retryPlanText({ policy: {}, maxAttempts: 1 })).toContain("no retries");
  });

  it("rejects bad input naming the flag", async () => {
    await expect(plan("--base", "soon")).rejects.toThrow(/base: must be a duration/);
    await expect(plan("--jitter", "2")).rejects.toThrow(/--jitter: must be between 0 and 1/);
    await expect(plan("--rate", "600/h")).rejects.toThrow(/give both --rate and --duration/);
    expect(() => parseRate("fast")).toThrow(/rate: must look like 600\/h/);
  });
});
