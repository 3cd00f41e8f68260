import { type Command, InvalidArgumentError } from "commander";
import { type DatabaseFlags, openFromFlags, withDatabase } from "./common.js";
import { checkPauseTarget } from "../queues.js";
import { checkKindFilter } from "./kind-filter.js";
import { printJson } from "./output.js";

interface PauseFlags extends DatabaseFlags {
  readonly queue?: string;
  readonly kind?: string;
  readonly json?: boolean;
}

/** `errand pause --queue Q | --kind K` and `errand resume …` (see `errand.pause`). */
export function register(program: Command): void {
  for (const paused of [true, false]) {
    const verb = paused ? "pause" : "resume";
    withDatabase(
      program
        .command(verb)
        .description(
          paused
            ? "pause a queue or a kind in every worker within a second: running jobs finish, nothing is lost or charged an attempt"
            : "resume a paused queue or kind: workers take its jobs again at once",
        )
        .option("--queue <name>", `${verb} this queue`)
        .option("--kind <kind>", `${verb} this kind`)
        .option("--json", `print {"${verb}d": true|false} (false: it was ${paused ? "paused" : "not paused"} already)`),
    ).action(async (flags: PauseFlags) => {
      if ((flags.queue !== undefined) === (flags.kind !== undefined)) throw new InvalidArgumentError("give --queue NAME or --kind KIND (exactly one)");
      const target = flags.queue !== undefined ? { queue: flags.queue } : { kind: flags.kind! };
      checkPauseTarget(target); // a bad name fails here, before connecting
      const errand = await openFromFlags(flags);
      try {
        const changed = paused ? await errand.pause(target) : await errand.resume(target);
        // A kind no job has ever had is likely a typo: say so (it is paused all the same).
        if (flags.kind !== undefined && paused) await checkKindFilter(errand, flags.kind).catch((error: unknown) => console.error(`warning: ${(error as Error).message}`));
        const what = flags.queue !== undefined ? `queue '${flags.queue}'` : `kind '${flags.kind}'`;
        if (flags.json) printJson({ [`${verb}d`]: changed });
        else console.log(changed ? `${verb}d ${what}` : `${what} was ${paused ? "paused" : "not paused"} already`);
      } finally {
        await errand.close();
      }
    });
  }
}
