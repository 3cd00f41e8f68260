import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";

// One database for the file; CLI runs are processes and the embedded database serves one
// process at a time, so the batches are made (and the errand closed) before any CLI run.
const db = cliDatabase();
const cli = (...args: string[]) => errandCli([...args, ...db.flags], { COLUMNS: "200" });
afterAll(() => db.cleanup());

let open: { batchId: string; jobIds: string[] };
let finished: { batchId: string; jobIds: string[] };
beforeAll(async () => {
  const errand = await db.open();
  try {
    finished = await errand.batch({ jobs: [{ kind: "resize", payload: { n: 1 } }, { kind: "resize", payload: { n: 2 } }], then: { kind: "album_ready", payload: { albumId: 7 } } });
    await errand.cancel({ ids: finished.jobIds });
    open = await errand.batch({ jobs: [{ kind: "resize", payload: { n: 3 } }], then: { kind: "album_ready" } });
  } finally {
    await errand.close();
  }
});

describe("errand batches", () => {
  it("list prints the batches newest first, filtered by status; --json prints them whole", async () => {
    const table = await cli("batches", "list");
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ *ID\s+STATUS\s+TOTAL\s+DONE\s+DEAD\s+CANCELLED\s+LEFT\s+CALLBACK\s+CREATED$/);
    expect(lines[1]).toMatch(new RegExp(`^ *${open.batchId}\\s+open\\s+1\\s+0\\s+0\\s+0\\s+1\\s+album_ready\\s`));
    expect(lines[2]).toMatch(new RegExp(`^ *${finished.batchId}\\s+finished\\s+2\\s+0\\s+0\\s+2\\s+0\\s+album_ready \\(job \\d+\\)\\s`));
    expect(JSON.parse((await cli("batches", "list", "--finished", "--json")).stdout)).toEqual([expect.objectContaining({ id: finished.batchId, status: "finished", cancelled: 2, failedIds: finished.jobIds })]);
    expect((await cli("batches", "list", "--open", "--finished")).code).toBe(2);
  });

  it("show prints one batch's counts, failed members, callback and members; an unknown id is an error", async () => {
    const shown = await cli("batches", "show", finished.batchId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`batch ${finished.batchId}: finished\n`);
    expect(shown.stdout).toContain("members:   2 (done 0, dead 0, cancelled 2, unfinished 0)\n");
    expect(shown.stdout).toContain(`failed:    ${finished.jobIds.join(", ")}\n`);
    expect(shown.stdout).toMatch(/callback: {2}album_ready \{"albumId":7\} → job \d+\n/);
    expect(shown.stdout).toMatch(new RegExp(`^ *${finished.jobIds[1]}  resize +cancelled`, "m"));
    const json = JSON.parse((await cli("batches", "show", open.batchId, "--json")).stdout) as { batch: { remaining: number }; members: { id: string }[] };
    expect(json.batch.remaining).toBe(1);
    expect(json.members.map((m) => m.id)).toEqual(open.jobIds);
    expect(await cli("batches", "show", "999999")).toMatchObject({ code: 1, stderr: "errand: no batch with id 999999\n" });
    expect(await cli("batches", "show", "x")).toMatchObject({ code: 2, stderr: "errand: batch id 'x' is not a positive integer\n" });
  });
});
