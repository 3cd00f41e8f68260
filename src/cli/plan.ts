import { type Command, InvalidArgumentError } from "commander";
import { ValidationError } from "../errors.js";
import { humanAge, parseDuration } from "../human-format.js";
import { capacityPlanText, parseRate, retryPlanText } from "../planning.js";
import { defaultMaxAttempts, defaultRetryPolicy } from "../defaults.js";
import { maxMaxAttempts } from "../validate.js";
import { intArg } from "./common.js";

interface PlanFlags {
  readonly base?: string;
  readonly cap?: string;
  readonly factor?: string;
  readonly jitter?: string;
  readonly maxAttempts?: number;
  readonly outage?: string;
  readonly rate?: string;
  readonly duration?: string;
  readonly burst?: number;
  readonly workers?: number;
}

/** `errand plan`: the retry schedule of a policy and the workers a load needs. No database. */
export function register(program: Command): void {
  program
    .command("plan")
    .description("print a retry policy's schedule (wait and cumulative wait per failure) and/or the workers a rate × duration needs")
    .option("--base <duration>", `wait after the first failure (default ${humanAge(defaultRetryPolicy.baseDelayMs)})`)
    .option("--cap <duration>", `longest single wait (default ${humanAge(defaultRetryPolicy.maxDelayMs)})`)
    .option("--factor <n>", `growth per failure (default ${defaultRetryPolicy.factor})`)
    .option("--jitter <fraction>", `randomised fraction of each wait, 0–1 (default ${defaultRetryPolicy.jitter}: ×${1 - defaultRetryPolicy.jitter}–1.0)`)
    .option("--max-attempts <n>", `attempts before a job is dead (default ${defaultMaxAttempts})`, intArg(1, maxMaxAttempts))
    .option("--outage <duration>", "an outage to ride out, e.g. 20m: says whether the last attempt comes after it")
    .option("--rate <n/period>", "jobs arriving, e.g. 600/h, 10/min, 2/s")
    .option("--duration <duration>", "how long one job runs, e.g. 8s")
    .option("--burst <n>", "jobs arriving at once", intArg(1))
    .option("--workers <n>", "workers draining the burst (default: the minimum for the rate)", intArg(1))
    .action((flags: PlanFlags) => {
      try {
        process.stdout.write(planOutput(flags));
      } catch (error) {
        if (error instanceof ValidationError) throw new InvalidArgumentError(`--${flagName(error.field)}: ${error.message.replace(/^[^:]+: /, "")}`);
        throw error;
      }
    });
}

function planOutput(flags: PlanFlags): string {
  const capacityAsked = [flags.rate, flags.duration, flags.burst, flags.workers].some((x) => x !== undefined);
  const retryAsked = [flags.base, flags.cap, flags.factor, flags.jitter, flags.maxAttempts, flags.outage].some((x) => x !== undefined);
  const parts: string[] = [];
  if (retryAsked || !capacityAsked) {
    parts.push(
      retryPlanText({
        policy: {
          baseDelayMs: flags.base === undefined ? defaultRetryPolicy.baseDelayMs : parseDuration(flags.base, "base"),
          maxDelayMs: flags.cap === undefined ? defaultRetryPolicy.maxDelayMs : parseDuration(flags.cap, "cap"),
          factor: flags.factor === undefined ? defaultRetryPolicy.factor : number(flags.factor, "factor"),
          jitter: flags.jitter === undefined ? defaultRetryPolicy.jitter : number(flags.jitter, "jitter"),
        },
        maxAttempts: flags.maxAttempts ?? defaultMaxAttempts,
        ...(flags.outage === undefined ? {} : { outageMs: parseDuration(flags.outage, "outage") }),
      }),
    );
  }
  if (capacityAsked) {
    if (flags.rate === undefined || flags.duration === undefined) throw new InvalidArgumentError("give both --rate and --duration (e.g. --rate 600/h --duration 8s)");
    parts.push(
      capacityPlanText({
        jobsPerHour: parseRate(flags.rate),
        durationMs: parseDuration(flags.duration, "duration"),
        ...(flags.burst === undefined ? {} : { burst: flags.burst }),
        ...(flags.workers === undefined ? {} : { workers: flags.workers }),
      }),
    );
  }
  return parts.join("\n");
}

function number(text: string, field: string): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n)) throw new ValidationError(field, `must be a number (got ${JSON.stringify(text)})`);
  return n;
}

/** Maps a policy field back to the flag that set it. */
function flagName(field: string): string {
  const names: Record<string, string> = { "retry.baseDelayMs": "base", "retry.maxDelayMs": "cap", "retry.factor": "factor", "retry.jitter": "jitter", maxAttempts: "max-attempts" };
  return names[field] ?? field;
}
