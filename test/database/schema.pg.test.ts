import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// One source of truth for the schema is the migrations; schema.sql is their committed
// result, for reading and review. This fails when a migration changed and schema.sql did not.
describe("schema.sql", () => {
  it("matches what the migrations create", async () => {
    const result = await promisify(execFile)(process.execPath, ["scripts/schema-dump.js", "--check"], {
      cwd: new URL("../../", import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: process.env.ERRAND_TEST_URL },
    }).catch((error: { stdout: string; stderr: string }) => error);
    expect(result.stderr).toBe("");
    expect(result.stdout).toContain("schema.sql matches the migrations");
  });
});
