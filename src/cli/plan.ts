import { type Command, InvalidArgumentError } from "commander";
import { ValidationError } from "../errors.js";
import { humanAge, parseDuration } from "../human-format.js";
import { type CapacityOptions, type RetryPlanOptions, capacity, capacityPlanText, parseRate, retryPlanText, retrySchedule } from "../planning.js";
import { defaultMaxAttempts, defaultRetryPolicy } from "../defaults.js";
import { resolveRetryPolicy } from "../retry-policy.js";
import { checkMaxAttempts, maxMaxAttempts } from "../validate.js";
import { intArg } from "./common.js";
import { printJson } from "./output.js";

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
  readonly json?: boolean;
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
    .option("--json", 'print one JSON object: {"retry": {policy, maxAttempts, steps, …}} and/or {"capacity": {workers, minWorkers, …}}')
    .action((flags: PlanFlags) => {
      try {
        const { retry, load } = planInput(flags);
        if (flags.json) printJson({ ...(retry ? { retry: retryJson(retry) } : {}), ...(load ? { capacity: capacityJson(load) } : {}) });
        else process.stdout.write([...(retry ? [retryPlanText(retry)] : []), ...(load ? [capacityPlanText(load)] : [])].join("\n"));
      } catch (error) {
        if (error instanceof ValidationError) throw new InvalidArgumentError(`--${flagName(error.field)}: ${error.message.replace(/^[^:]+: /, "")}`);
        throw error;
      }
    });
}

/** What the flags ask for: a retry policy to lay out (the default one when nothing is asked), a load, or both. */
function planInput(flags: PlanFlags): { retry?: RetryPlanOptions; load?: CapacityOptions } {
  const capacityAsked = [flags.rate, flags.duration, flags.burst, flags.workers].some((x) => x !== undefined);
  const retryAsked = [flags.base, flags.cap, flags.factor, flags.jitter, flags.maxAttempts, flags.outage].some((x) => x !== undefined);
  const input: { retry?: RetryPlanOptions; load?: CapacityOptions } = {};
  if (retryAsked || !capacityAsked) {
    input.retry = {
      policy: {
        baseDelayMs: flags.base === undefined ? defaultRetryPolicy.baseDelayMs : parseDuration(flags.base, "base"),
        maxDelayMs: flags.cap === undefined ? defaultRetryPolicy.maxDelayMs : parseDuration(flags.cap, "cap"),
        factor: flags.factor === undefined ? defaultRetryPolicy.factor : number(flags.factor, "factor"),
        jitter: flags.jitter === undefined ? defaultRetryPolicy.jitter : number(flags.jitter, "jitter"),
      },
      maxAttempts: flags.maxAttempts ?? defaultMaxAttempts,
      ...(flags.outage === undefined ? {} : { outageMs: parseDuration(flags.outage, "outage") }),
    };
  }
  if (capacityAsked) {
    if (flags.rate === undefined || flags.duration === undefined) throw new InvalidArgumentError("give both --rate and --duration (e.g. --rate 600/h --duration 8s)");
    input.load = {
      jobsPerHour: parseRate(flags.rate),
      durationMs: parseDuration(flags.duration, "duration"),
      ...(flags.burst === undefined ? {} : { burst: flags.burst }),
      ...(flags.workers === undefined ? {} : { workers: flags.workers }),
    };
  }
  return input;
}

/** The retry plan as data: the policy, each wait, and when the last attempt runs (at the longest and the shortest jitter). */
function retryJson(options: RetryPlanOptions) {
  const policy = resolveRetryPolicy(options.policy, "retry");
  const maxAttempts = checkMaxAttempts(options.maxAttempts, "maxAttempts");
  const steps = retrySchedule(policy, maxAttempts);
  const last = steps.at(-1);
  return {
    policy,
    maxAttempts,
    steps,
    lastAttemptMs: last?.cumulativeMs ?? 0,
    minLastAttemptMs: last?.minCumulativeMs ?? 0,
    ...(options.outageMs === undefined ? {} : { outageMs: options.outageMs }),
  };
}

/** The capacity arithmetic as data: workers needed (fractional, and at least), and how long a burst takes to drain with how many. */
function capacityJson(load: CapacityOptions) {
  const result = capacity(load);
  return {
    jobsPerHour: load.jobsPerHour,
    durationMs: load.durationMs,
    workers: result.workers,
    minWorkers: result.minWorkers,
    ...(load.burst === undefined ? {} : { burst: load.burst, burstWorkers: load.workers ?? result.minWorkers, burstClearMs: result.burstClearMs }),
  };
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
