import type { ChildProcess } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";
import { spawnErrand } from "../support/process.js";

const db = cliDatabase();
afterAll(() => db.cleanup());

let child: ChildProcess | undefined;
afterEach(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  child = undefined;
});

/** Starts `errand dashboard`, resolves with its URL once it listens. */
function startDashboard(args: string[], env: Record<string, string> = {}) {
  const run = spawnErrand("errand dashboard", ["dashboard", "--port", "0", ...args, ...db.flags], env);
  child = run.child;
  const address = (line: unknown) => /on (http:\/\/\S+?:\d+)\//.exec(String(line))?.[1];
  const url = run
    .waitForLog((l) => address(l.text) !== undefined, 30_000, "the dashboard's address")
    .then((l) => address(l.text)!.replace("0.0.0.0", "127.0.0.1"));
  return { url, exited: run.exited.then((exit) => exit.code), stderr: run.stderr };
}

describe("errand dashboard (CLI)", () => {
  it("refuses a non-loopback address without an auth setting", async () => {
    const result = await errandCli(["dashboard", "--host", "0.0.0.0", ...db.flags], { ERRAND_DASHBOARD_TOKEN: "", ERRAND_DASHBOARD_USER: "", ERRAND_DASHBOARD_PASSWORD: "" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("refusing to serve the dashboard on 0.0.0.0 without authentication");
  });

  it("refuses a --trusted-origin that is not an origin, naming it", async () => {
    const result = await errandCli(["dashboard", "--trusted-origin", "https://ops.example.com", "--trusted-origin", "ops.example.com/errand", ...db.flags]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--trusted-origin[1]: must be an origin like https://ops.example.com");
  });

  it("serves on 127.0.0.1, read-only, and exits 0 on SIGTERM", async () => {
    const run = startDashboard(["--read-only"]);
    const url = await run.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const overview = await fetch(`${url}/`);
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain("<h1>Overview</h1>");
    const post = await fetch(`${url}/dead/retry`, { method: "POST", body: new URLSearchParams({ id: "1", confirm: "yes" }) });
    expect(post.status).toBe(403);
    child!.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("binds elsewhere when a token is set, and asks for it", async () => {
    const token = "cli-test-token-0123456789";
    const run = startDashboard(["--host", "0.0.0.0"], { ERRAND_DASHBOARD_TOKEN: token });
    const url = await run.url;
    expect((await fetch(`${url}/`)).status).toBe(401);
    expect((await fetch(`${url}/`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    child!.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });
});
