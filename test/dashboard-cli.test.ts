import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "./support/cli.js";

const bin = new URL("../bin/errand.js", import.meta.url).pathname;
const db = cliDatabase();
afterAll(() => db.cleanup());

let child: ChildProcess | undefined;
afterEach(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  child = undefined;
});

/** Starts `errand dashboard`, resolves with its URL once it listens. */
function startDashboard(args: string[], env: NodeJS.ProcessEnv = {}) {
  const proc = spawn(process.execPath, [bin, "dashboard", "--port", "0", ...args, ...db.flags], { env: { ...process.env, DATABASE_URL: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child = proc;
  let stderr = "";
  proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on("close", resolve));
  const url = new Promise<string>((resolve, reject) => {
    let stdout = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /on (http:\/\/\S+?:\d+)\//.exec(stdout);
      if (match) resolve(match[1]!.replace("0.0.0.0", "127.0.0.1"));
    });
    void exited.then((code) => reject(new Error(`dashboard exited with ${code}: ${stderr}`)));
  });
  return { url, exited, stderr: () => stderr };
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
