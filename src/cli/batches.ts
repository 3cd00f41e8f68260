import { type Command, InvalidArgumentError } from "commander";
import type { Batch, BatchMember } from "../batches.js";
import { NotFoundError } from "../errors.js";
import { isJobId } from "../validate.js";
import { type DatabaseFlags, intArg, openFromFlags, withDatabase } from "./common.js";
import { printJson, terminal } from "./output.js";
import { type Column, renderTable } from "./table.js";

/** `errand batches list|show`: batches' counts, failed members and callback (see `errand.batch`). */
export function register(program: Command): void {
  const batches = program.command("batches").description("batches of jobs with a callback: their counts, failed members and callback job");

  withDatabase(
    batches
      .command("list")
      .description("list batches, newest first")
      .option("--open", "only batches with members not finished yet")
      .option("--finished", "only batches whose callback was enqueued")
      .option("--limit <n>", "at most this many (default 50)", intArg(1, 1000))
      .option("--json", "print a JSON array of the batches"),
  ).action(async (flags: DatabaseFlags & { open?: boolean; finished?: boolean; limit?: number; json?: boolean }) => {
    if (flags.open && flags.finished) throw new InvalidArgumentError("give --open or --finished, not both");
    const errand = await openFromFlags(flags);
    try {
      const list = await errand.listBatches({
        ...(flags.open ? { status: "open" as const } : flags.finished ? { status: "finished" as const } : {}),
        ...(flags.limit ? { limit: flags.limit } : {}),
      });
      if (flags.json) printJson(list);
      else if (list.length === 0) console.log("no batches");
      else console.log(renderTable(batchColumns, list, terminal()).join("\n"));
    } finally {
      await errand.close();
    }
  });

  withDatabase(
    batches
      .command("show")
      .description("one batch: its counts, failed members, callback and members")
      .argument("<id>", "batch id")
      .option("--members <n>", "list at most this many members (default 100; 0 for none)", intArg(0, 1000))
      .option("--json", 'print {"batch": …, "members": […]}'),
  ).action(async (id: string, flags: DatabaseFlags & { members?: number; json?: boolean }) => {
    if (!isJobId(id)) throw new InvalidArgumentError(`batch id '${id}' is not a positive integer`);
    const errand = await openFromFlags(flags);
    try {
      const batch = await errand.getBatch(id);
      if (!batch) throw new NotFoundError(`no batch with id ${id}`);
      const limit = flags.members ?? 100;
      const members = limit === 0 ? [] : await errand.batchMembers(id, { limit });
      if (flags.json) {
        printJson({ batch, members });
        return;
      }
      console.log(describe(batch).join("\n"));
      if (members.length > 0) {
        console.log("");
        console.log(renderTable(memberColumns, members, terminal()).join("\n"));
        if (members.length < batch.total) console.log(`(${members.length} of ${batch.total} members shown; --members N for more)`);
      }
    } finally {
      await errand.close();
    }
  });
}

/** A batch's facts, one per line. */
function describe(batch: Batch): string[] {
  const at = (date: Date | null) => (date === null ? "-" : `${date.toISOString().slice(0, 19)}Z`);
  return [
    `batch ${batch.id}: ${batch.status}`,
    `members:   ${batch.total} (done ${batch.done}, dead ${batch.dead}, cancelled ${batch.cancelled}, unfinished ${batch.remaining})`,
    `failed:    ${batch.failedIds.length === 0 ? "none" : batch.failedIds.join(", ")}`,
    `callback:  ${batch.callback.kind} ${JSON.stringify(batch.callback.payload)}${batch.callbackJobId === null ? " (enqueued when every member has finished)" : ` → job ${batch.callbackJobId}`}`,
    `created:   ${at(batch.createdAt)}`,
    `finished:  ${at(batch.finishedAt)}`,
  ];
}

const batchColumns: readonly Column<Batch>[] = [
  { header: "ID", cell: (b) => b.id, right: true },
  { header: "STATUS", cell: (b) => b.status, style: (b) => (b.status === "open" ? undefined : "green") },
  { header: "TOTAL", cell: (b) => String(b.total), right: true },
  { header: "DONE", cell: (b) => String(b.done), right: true },
  { header: "DEAD", cell: (b) => String(b.dead), right: true, style: (b) => (b.dead > 0 ? "red" : undefined) },
  { header: "CANCELLED", cell: (b) => String(b.cancelled), right: true, hideRank: 2 },
  { header: "LEFT", cell: (b) => String(b.remaining), right: true },
  { header: "CALLBACK", cell: (b) => (b.callbackJobId === null ? b.callback.kind : `${b.callback.kind} (job ${b.callbackJobId})`), minWidth: 12 },
  { header: "CREATED", cell: (b) => `${b.createdAt.toISOString().slice(0, 19)}Z`, hideRank: 1 },
];

const memberColumns: readonly Column<BatchMember>[] = [
  { header: "JOB", cell: (m) => m.id, right: true },
  { header: "KIND", cell: (m) => m.kind, minWidth: 12 },
  { header: "STATUS", cell: (m) => m.status, style: (m) => (m.status === "dead" ? "red" : undefined) },
  { header: "ATTEMPTS", cell: (m) => `${m.attempts}/${m.maxAttempts}`, right: true, hideRank: 1 },
  { header: "LAST ERROR", cell: (m) => m.error, minWidth: 20, style: () => "red" },
];
