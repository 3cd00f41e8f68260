import { Command, CommanderError, InvalidArgumentError } from "commander";
import { createRequire } from "node:module";
import { ValidationError } from "../errors.js";
import { closeOpened } from "./common.js";
import * as batches from "./batches.js";
import * as cancel from "./cancel.js";
import * as dashboard from "./dashboard.js";
import * as dead from "./dead.js";
import * as demo from "./demo.js";
import * as enqueue from "./enqueue.js";
import * as migrate from "./migrate.js";
import * as limits from "./limits.js";
import * as pause from "./pause.js";
import * as metrics from "./metrics.js";
import * as plan from "./plan.js";
import * as purge from "./purge.js";
import * as relay from "./relay.js";
import * as stats from "./stats.js";
import * as schedules from "./schedules.js";
import * as worker from "./worker.js";

const { version } = createRequire(import.meta.url)("../../package.json") as { version: string };

// One file per command; each exports register(program).
const commands = [migrate, worker, enqueue, cancel, pause, limits, batches, dead, demo, dashboard, schedules, stats, purge, plan, metrics, relay];

const program = new Command("errand")
  .description("background jobs on PostgreSQL (or the embedded PGlite database)")
  .version(version)
  .exitOverride()
  .configureOutput({ outputError: () => {} });
for (const command of commands) command.register(program);
for (const command of program.commands) command.exitOverride().configureOutput({ outputError: () => {} });
for (const group of program.commands) for (const sub of group.commands) sub.exitOverride().configureOutput({ outputError: () => {} });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = report(error);
  await closeOpened();
}

/**
 * One line on stderr, never a stack trace; exit 2 for bad arguments, 1 for failures. Help
 * asked for (`--help`, `errand help`) exits 0; help shown because no command was given
 * (`errand`, `errand dead`) went to stderr and exits 2, like any other incomplete command line.
 */
function report(error: unknown): number {
  if (error instanceof CommanderError) {
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return 0;
    if (error.code === "commander.help") return error.exitCode === 0 ? 0 : 2;
    say(error.message.replace(/^error: /, ""));
    return 2;
  }
  say(error instanceof Error ? error.message : String(error));
  return error instanceof InvalidArgumentError || error instanceof ValidationError ? 2 : 1;
}

/** Writes `errand: message` as one line: control characters (a newline in a quoted argument) are escaped. */
function say(message: string): void {
  process.stderr.write(`errand: ${message.replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1))}\n`);
}
