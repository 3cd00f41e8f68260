import { type Command, InvalidArgumentError } from "commander";
import { isJobId } from "../validate.js";
import { type DatabaseFlags, openFromFlags, withDatabase } from "./common.js";
import { checkKindFilter } from "./kind-filter.js";
import { printJson } from "./output.js";

/** `errand cancel ID… | --kind KIND`: cancel jobs for good (see `errand.cancel`). */
export function register(program: Command): void {
  withDatabase(
    program
      .command("cancel")
      .description("cancel jobs for good: ready ones never run, running ones are stopped; by ids (all or nothing) or every ready and running job of a kind")
      .argument("[ids...]", "job ids")
      .option("--kind <kind>", "every ready and running job of this kind")
      .option("--json", 'print {"ids": [...]}, the ids cancelled'),
  ).action(async (ids: string[], flags: DatabaseFlags & { kind?: string; json?: boolean }) => {
    if ((ids.length > 0) === (flags.kind !== undefined)) throw new InvalidArgumentError("give job ids or --kind KIND (exactly one)");
    for (const id of ids) if (!isJobId(id)) throw new InvalidArgumentError(`job id '${id}' is not a positive integer`);
    const errand = await openFromFlags(flags);
    try {
      const cancelled = await errand.cancel(flags.kind === undefined ? { ids } : { kind: flags.kind });
      if (cancelled.length === 0 && flags.kind !== undefined) await checkKindFilter(errand, flags.kind);
      if (flags.json) printJson({ ids: cancelled });
      else console.log(`cancelled ${cancelled.length} job${cancelled.length === 1 ? "" : "s"}${cancelled.length ? `: ${cancelled.join(", ")}` : ""}`);
    } finally {
      await errand.close();
    }
  });
}
