import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";
import { root } from "../support/process.js";

// The README's `npm test` passes on a fresh machine with PostgreSQL and no Chromium: the
// browser tests are left out with one line saying why and how to run them. Under CI a
// missing Chromium fails the run instead. Each case runs vitest itself on the browser
// tests plus one small file, with a Chromium path that does not exist.
const nowhere = "/nonexistent/errand-test/chromium";
const vitest = `${root}/node_modules/vitest/vitest.mjs`;

function runVitest(ci: boolean, files = ["test/browser", "test/package/readme.test.ts"], missing: Record<string, string> = { ERRAND_TEST_CHROMIUM: nowhere }): Promise<{ code: number; output: string }> {
  // A shell's environment, not this worker's: vitest's own variables would confuse the child.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(VITEST|ERRAND_TEST_|CI$)/.test(k)));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [vitest, "run", ...files],
      { cwd: root, env: { ...env, ...missing, NO_COLOR: "1", ...(ci ? { CI: "true" } : {}) }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

describe("the README's test command without Chromium", () => {
  it("passes outside CI, saying once that the browser tests are skipped and how to run them", { timeout: 150_000 }, async () => {
    const { code, output } = await runVitest(false);
    expect(output).not.toContain("dashboard.pg.test.ts");
    expect(output).toMatch(/Test Files +\d+ passed/);
    expect(code).toBe(0);
    const line = `*** Chromium not found at ${nowhere}: the browser tests are SKIPPED; install it with \`apt-get install -y chromium\` (as .ci/run does) to run them. ***`;
    expect(output.split(line)).toHaveLength(2);
  });

  it("fails under CI=true, naming the missing browser", { timeout: 150_000 }, async () => {
    const { code, output } = await runVitest(true);
    expect(code).not.toBe(0);
    expect(output).toContain(`Chromium not found at ${nowhere}: under CI the browser tests must run, not be skipped`);
  });
});

describe("the README's test command without NATS", () => {
  it("passes outside CI, saying once that the JetStream tests are skipped, on both databases' halves", { timeout: 150_000 }, async () => {
    const nats = "nats://127.0.0.1:1";
    const { code, output } = await runVitest(false, ["test/jetstream", "src/clock.test.ts"], { ERRAND_TEST_NATS_URL: nats });
    expect(output).not.toContain("jobs-nats.test.ts");
    expect(output).toMatch(/Test Files +\d+ passed/);
    expect(code).toBe(0);
    expect(output.split(`*** NATS with JetStream at ${nats} is not reachable`)).toHaveLength(2);
  });
});
