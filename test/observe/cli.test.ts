import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";
import { eventually } from "../support/db.js";
import { spawnErrand } from "../support/process.js";

// One database for the file; CLI runs are processes and the embedded database serves one
// process at a time, so these run in sequence.
const db = cliDatabase();
const cli = (...args: string[]) => errandCli([...args, ...db.flags]);
afterAll(() => db.cleanup());

beforeAll(async () => {
  expect((await cli("migrate")).code).toBe(0);
  expect((await cli("enqueue", "send_receipt", '{"order_id": 1}')).code).toBe(0);
  expect((await cli("enqueue", "send_receipt", '{"order_id": 2}')).code).toBe(0);
  expect((await cli("enqueue", "resize", "{}", "--delay", "3600")).code).toBe(0);
});

describe("observability commands", () => {
  it("errand stats prints a table, and JSON with --json", async () => {
    const table = await errandCli(["stats", ...db.flags], { COLUMNS: "300" });
    expect(table.code).toBe(0);
    const lines = table.stdout.split("\n");
    expect(lines[0]).toMatch(/^kind\s+ready\s+scheduled\s+running\s+done\s+dead\s+cancelled\s+oldest ready\s+expired leases\s+done\/1m\s+failed\/1m\s+timed out\/1m\s+cancelled\/1m\s+done\/1h\s+failed\/1h\s+timed out\/1h\s+cancelled\/1h/);
    expect(lines.find((l) => l.startsWith("send_receipt"))).toMatch(/^send_receipt\s+2\s+0\s+0\s+0\s+0\s+0\s+\d+ s\s+0/);
    expect(lines.find((l) => l.startsWith("(total)"))).toMatch(/^\(total\)\s+2\s+1\s+0/);
    const json = JSON.parse((await cli("stats", "--json")).stdout) as { total: { ready: number; scheduled: number }; kinds: Record<string, unknown> };
    expect(json.total).toMatchObject({ ready: 2, scheduled: 1 });
    expect(Object.keys(json.kinds)).toEqual(["resize", "send_receipt"]);
    const one = JSON.parse((await cli("stats", "--json", "--kind", "resize")).stdout) as { kinds: Record<string, unknown> };
    expect(Object.keys(one.kinds)).toEqual(["resize"]);
  });

  it("errand stats --watch --json prints a line per refresh until SIGINT", async () => {
    const watch = spawnErrand("errand stats --watch", ["stats", "--watch", "0.1", "--json", ...db.flags]);
    try {
      await eventually(() => watch.logs.length >= 3, 30_000, "three refreshes");
    } finally {
      watch.child.kill("SIGINT");
    }
    expect((await watch.exited).code).toBe(0);
    const lines = watch.stdout().trim().split("\n").map((line) => JSON.parse(line) as { total: { ready: number } });
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.every((line) => line.total.ready === 2)).toBe(true);
  });

  it("errand purge counts with --dry-run, keeps dead jobs, and names a bad duration or duty cycle", async () => {
    const dry = await cli("purge", "--dry-run", "--older-than", "0s");
    expect(dry).toMatchObject({ code: 0, stdout: "would delete 0 done jobs and 0 cancelled jobs finished more than 0 s ago; dead jobs kept (see errand dead list)\n" });
    const real = await cli("purge");
    expect(real.stdout).toBe("deleted 0 done jobs and 0 cancelled jobs finished more than 7 d ago; dead jobs kept (see errand dead list) (4 DELETEs)\n");
    expect(JSON.parse((await cli("purge", "--json", "--dead-older-than", "30d")).stdout)).toEqual({ done: 0, cancelled: 0, dead: 0, finishedBatches: 0, batches: 5, dryRun: false });
    const bad = await cli("purge", "--older-than", "a week");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('errand: --older-than: must be a duration like 30s, 5m, 1h or 7d (got "a week")\n');
    expect(JSON.parse((await cli("purge", "--json", "--duty-cycle", "1")).stdout)).toMatchObject({ done: 0, dryRun: false });
    const share = await cli("purge", "--duty-cycle", "1.5");
    expect(share.code).toBe(2);
    expect(share.stderr).toBe("errand: --duty-cycle: must be a number more than 0 and at most 1 (got 1.5)\n");
  });

  it("errand plan prints the seed's table", async () => {
    const out = await errandCli(["plan", "--max-attempts", "8"]);
    expect(out.stdout).toContain("7\t1,920 s\t63.5 min\n");
  });

  it("errand metrics serves /metrics and sends alerts until SIGTERM", async () => {
    const hooks: { status: string; rule: string; kind: string }[] = [];
    const hook = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        hooks.push(JSON.parse(body) as { status: string; rule: string; kind: string });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve));
    const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const alertFlags = ["--alert-webhook", hookUrl, "--oldest-ready", "1ms", "--alert-interval", "1s"];
    const metrics = spawnErrand("errand metrics", ["metrics", "--port", "0", "--host", "127.0.0.1", ...alertFlags, ...db.flags]);
    try {
      const { port } = await metrics.waitForLog((l) => l.event === "metrics_listening", 30_000, "metrics_listening");
      const body = await (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
      expect(body).toContain('errand_jobs{kind="send_receipt",state="ready"} 2');
      expect(body).toContain('errand_jobs{kind="resize",state="scheduled"} 1');
      await eventually(() => hooks.length > 0, 30_000, "the webhook alert");
      expect(hooks).toEqual([expect.objectContaining({ status: "firing", rule: "oldest_ready", kind: "send_receipt" })]);
      await metrics.waitForLog((l) => l.event === "alert_firing", 10_000, "the alert log line");
    } finally {
      metrics.child.kill("SIGTERM");
    }
    expect((await metrics.exited).code).toBe(0);
    hook.close();
  });
});
