import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type CliDatabase, cliDatabase, errandCli } from "../support/cli.js";

// `errand schedules` as a user runs it: the built binary (npm test builds first).
let db: CliDatabase;
beforeEach(() => {
  db = cliDatabase();
});
afterEach(() => db.cleanup());

const cli = (...args: string[]) => errandCli([...args, ...db.flags]);

describe("errand schedules", () => {
  it("lists each schedule with next run, last slot, last success and policy; pauses and removes", async () => {
    const clock = { now: () => Date.parse("2026-01-01T00:00:00Z") };
    const errand = await db.open();
    const schedules = errand.schedules.withClock(clock);
    await schedules.declare([
      { name: "nightly-report", cron: "0 2 * * *", timezone: "Europe/Berlin", kind: "send_report", missed: "latest" },
      { name: "sweep", cron: "*/5 * * * *", kind: "sweep", overlap: "allow", missed: "catch_up", catchUpLimit: 3 },
    ]);
    await schedules.scheduler().runOnce(new Date("2026-01-01T00:05:01Z"));
    await errand.close();

    const list = await errandCli(["schedules", ...db.flags], { COLUMNS: "200" });
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+CRON\s+ZONE\s+KIND\s+NEXT RUN\s+LAST SLOT\s+OUTCOME\s+LAST SUCCESS\s+POLICY$/);
    expect(lines[1]).toMatch(/^nightly-report\s+0 2 \* \* \*\s+Europe\/Berlin\s+send_report\s+2026-01-01T01:00Z\s+-\s+-\s+-\s+overlap skip, missed latest$/);
    expect(lines[2]).toMatch(/^sweep\s+\*\/5 \* \* \* \*\s+UTC\s+sweep\s+2026-01-01T00:10Z\s+2026-01-01T00:05Z\s+job \d+ ready\s+-\s+overlap allow, missed catch_up \(≤3\)$/);

    expect(await cli("schedules", "pause", "sweep")).toMatchObject({ code: 0, stdout: "paused schedule 'sweep'\n" });
    const unknown = await cli("schedules", "remove", "swep");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^errand: no schedule named 'swep' — did you mean 'sweep'\?/);
    expect(await cli("schedules", "remove", "nightly-report")).toMatchObject({ code: 0, stdout: "removed schedule 'nightly-report'\n" });
    const json = JSON.parse((await cli("schedules", "list", "--json")).stdout) as { name: string; paused: boolean; nextRun: string | null }[];
    expect(json).toMatchObject([{ name: "sweep", paused: true, nextRun: null }]);
  }, 300_000); // each CLI run opens the database afresh (seconds on PGlite under load)
});
