import { type Command, InvalidArgumentError } from "commander";
import { type DatabaseFlags, cliArg, intArg, openFromFlags, withDatabase } from "./common.js";
import { checkConcurrencyKey, parseRate } from "../limits.js";
import { checkQueueName } from "../validate.js";
import { printJson } from "./output.js";

interface TargetFlags extends DatabaseFlags {
  readonly queue?: string;
  readonly key?: string;
  readonly concurrency?: number;
  readonly rate?: string;
  readonly json?: boolean;
}

/** The one target of a set or remove: a queue or a key, checked before connecting. */
function target(flags: TargetFlags): { readonly queue: string } | { readonly key: string } {
  if ((flags.queue !== undefined) === (flags.key !== undefined)) throw new InvalidArgumentError("give --queue NAME or --key KEY (exactly one)");
  return flags.queue !== undefined ? { queue: checkQueueName(flags.queue, "--queue") } : { key: checkConcurrencyKey(flags.key, "--key") };
}

/** `errand limits list | set | remove`: queue limits and concurrency-key limits (see `errand.limits`). */
export function register(program: Command): void {
  const limits = program.command("limits").description("global limits, shared by every worker: a queue's concurrency, a concurrency key's concurrency and rate");

  withDatabase(limits.command("list").description("every limit, with what runs and waits under it now").option("--json", "print the limits as JSON")).action(
    async (flags: TargetFlags) => {
      const errand = await openFromFlags(flags);
      try {
        const [queues, keys] = await Promise.all([errand.limits.listQueues(), errand.limits.list()]);
        if (flags.json) return printJson({ queues, keys });
        for (const q of queues) console.log(`queue ${q.queue}: ${q.running} running of ${q.concurrency}`);
        for (const k of keys) {
          const rate = k.rate ? `, rate ${k.rate.count} per ${k.rate.periodMs} ms` : "";
          console.log(`key ${k.key}: ${k.running} running${k.concurrency === null ? "" : ` of ${k.concurrency}`}${rate}, ${k.ready} ready`);
        }
        if (queues.length + keys.length === 0) console.log("no limits");
      } finally {
        await errand.close();
      }
    },
  );

  withDatabase(
    limits
      .command("set")
      .description("set a queue's or a key's limits (workers learn them within a second)")
      .option("--queue <name>", "limit this queue: at most --concurrency of its jobs running at once")
      .option("--key <key>", "limit this concurrency key, or each key of a prefix ending in * (tenant:*)")
      .option("--concurrency <n>", "at most this many running at once (≥ 1)", intArg(1))
      .option("--rate <rate>", 'a key\'s starts per period: "10/s", "600/min" (keys only)', cliArg((value: string) => (parseRate(value, "rate"), value))),
  ).action(async (flags: TargetFlags) => {
    const which = target(flags);
    if ("queue" in which && flags.rate !== undefined) throw new InvalidArgumentError("--rate is for keys: a queue takes --concurrency");
    if (flags.concurrency === undefined && flags.rate === undefined) throw new InvalidArgumentError("give --concurrency N" + ("key" in which ? " and/or --rate RATE" : ""));
    const errand = await openFromFlags(flags);
    try {
      if ("queue" in which) await errand.limits.setQueue(which.queue, { concurrency: flags.concurrency! });
      else await errand.limits.set(which.key, { ...(flags.concurrency !== undefined && { concurrency: flags.concurrency }), ...(flags.rate !== undefined && { rate: flags.rate }) });
      console.log(`set the limits of ${"queue" in which ? `queue '${which.queue}'` : `key '${which.key}'`}`);
    } finally {
      await errand.close();
    }
  });

  withDatabase(
    limits
      .command("remove")
      .description("lift a queue's or a key's limits")
      .option("--queue <name>", "the queue")
      .option("--key <key>", "the key, as it was set"),
  ).action(async (flags: TargetFlags) => {
    const which = target(flags);
    const errand = await openFromFlags(flags);
    try {
      const removed = "queue" in which ? await errand.limits.removeQueue(which.queue) : await errand.limits.remove(which.key);
      console.log(removed ? "removed" : "there was no such limit");
    } finally {
      await errand.close();
    }
  });
}
