import { Cron } from "croner";
import { ValidationError } from "../errors.js";
import { checkKeys, checkMaxAttempts, closest, integer, nonNegativeMs } from "../validate.js";
import { defaultMaxPayloadBytes } from "../defaults.js";
import { serialisePayload } from "../payload.js";
import { type RetryPolicy, resolveRetryPolicy } from "../retry-policy.js";
import type { ByKind, Kind, PayloadField, UntypedJobs } from "../jobs.js";

/** While the previous run is still `ready` or `running`: `skip` the slot (default) or `allow` another run. */
export type OverlapPolicy = "skip" | "allow";

/**
 * Slots that came and went while no scheduler ran (an outage, a deploy): `skip` them
 * (default), enqueue only the `latest` one, or `catch_up` on each, up to `catchUpLimit`.
 */
export type MissedPolicy = "skip" | "latest" | "catch_up";

/**
 * One recurring job, declared in code: {@link ScheduleSettings}, the `kind` each slot
 * enqueues and its `payload` (default `{}`, which may be left out only where `{}` is a
 * valid payload of the kind). Typed by the job map, like `enqueueMany`'s jobs.
 *
 * @example
 * ```ts
 * await errand.schedules.declare([
 *   { name: "nightly-report", cron: "0 2 * * *", timezone: "Europe/Berlin", kind: "send_report", payload: { to: "ops" }, missed: "latest" },
 * ]);
 * ```
 */
export type ScheduleSpec<Jobs = UntypedJobs> = ByKind<{ [K in Kind<Jobs>]: ScheduleSettings & { readonly kind: K } & PayloadField<Jobs[K]> }>;

/** A {@link ScheduleSpec} but for its kind and payload. */
export interface ScheduleSettings {
  /** Unique name: letters, digits and `_ . : / -`, at most 200 characters. */
  readonly name: string;
  /** 5 fields (minute first), 6 (seconds first) or a nickname: `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`. */
  readonly cron: string;
  /** IANA time zone the cron is read in. Default `UTC`. */
  readonly timezone?: string;
  /** Attempts per job. Default: the kind's, else 8. */
  readonly maxAttempts?: number;
  /** Priority of each job. Default: the kind's, else 0. */
  readonly priority?: number;
  /** Backoff for each job. Default: the kind's. */
  readonly retry?: Partial<RetryPolicy>;
  /** Default `skip`. */
  readonly overlap?: OverlapPolicy;
  /** Default `skip`. */
  readonly missed?: MissedPolicy;
  /** Most missed slots `catch_up` enqueues (the most recent ones). Default 10. */
  readonly catchUpLimit?: number;
  /** A slot handled later than this after its time counts as missed. Default 60 000 ms. */
  readonly graceMs?: number;
}

/** Job options a schedule stores for its jobs. */
export interface ScheduleJobOptions {
  readonly maxAttempts?: number;
  readonly priority?: number;
  readonly retry?: Partial<RetryPolicy>;
}

/** A validated {@link ScheduleSpec}, ready to store. */
export interface ResolvedSchedule {
  readonly name: string;
  readonly cron: string;
  readonly timezone: string;
  readonly kind: string;
  readonly payload: string;
  readonly jobOptions: ScheduleJobOptions;
  readonly overlap: OverlapPolicy;
  readonly missed: MissedPolicy;
  readonly catchUpLimit: number;
  readonly graceMs: number;
}

const keys = ["name", "cron", "timezone", "kind", "payload", "maxAttempts", "priority", "retry", "overlap", "missed", "catchUpLimit", "graceMs"];
const cronCache = new Map<string, Cron>();

/**
 * The croner pattern for a cron in a zone (memoised). Fixed-time schedules (no `*`,
 * step or wildcard in the second, minute and hour fields, e.g. `30 2 * * *`) run once on
 * DST days: a slot in the spring-forward gap runs at the first valid time after it, a
 * slot in the repeated fall-back hour runs at its first occurrence. Interval schedules
 * (`0 * * * *`, `*\/15 * * * *`) follow elapsed time: every real hour, none skipped or doubled.
 */
export function cronFor(cron: string, timezone: string): Cron {
  const key = `${timezone}\u0000${cron}`;
  let pattern = cronCache.get(key);
  if (!pattern) {
    pattern = new Cron(cron, { timezone, paused: true, mode: "5-or-6-parts", fixedTimeRule: "no-wildcard" });
    cronCache.set(key, pattern);
  }
  return pattern;
}

/** Validates a declaration; every error names its field (`schedules[2].cron`). */
export function resolveSchedule(spec: ScheduleSpec, field: string): ResolvedSchedule {
  checkKeys(spec, field, keys);
  if (typeof spec !== "object" || spec === null) throw new ValidationError(field, "must be an object");
  const name = checkName(spec.name, `${field}.name`);
  const timezone = checkTimezone(spec.timezone ?? "UTC", `${field}.timezone`);
  const cron = checkCron(spec.cron, timezone, `${field}.cron`);
  if (typeof spec.kind !== "string" || spec.kind.length === 0 || spec.kind.length > 200) throw new ValidationError(`${field}.kind`, "must be a non-empty string of at most 200 characters");
  const overlap = oneOf(spec.overlap ?? "skip", ["skip", "allow"] as const, `${field}.overlap`);
  const missed = oneOf(spec.missed ?? "skip", ["skip", "latest", "catch_up"] as const, `${field}.missed`);
  const catchUpLimit = spec.catchUpLimit === undefined ? 10 : integer(spec.catchUpLimit, `${field}.catchUpLimit`);
  if (catchUpLimit < 1 || catchUpLimit > 10_000) throw new ValidationError(`${field}.catchUpLimit`, "must be from 1 to 10000");
  const graceMs = spec.graceMs === undefined ? 60_000 : Math.round(nonNegativeMs(spec.graceMs, `${field}.graceMs`));
  const jobOptions: { maxAttempts?: number; priority?: number; retry?: Partial<RetryPolicy> } = {};
  if (spec.maxAttempts !== undefined) jobOptions.maxAttempts = checkMaxAttempts(spec.maxAttempts, `${field}.maxAttempts`);
  if (spec.priority !== undefined) jobOptions.priority = integer(spec.priority, `${field}.priority`);
  if (spec.retry !== undefined) {
    resolveRetryPolicy(spec.retry, `${field}.retry`);
    jobOptions.retry = spec.retry;
  }
  const payload = serialisePayload(spec.payload === undefined ? {} : spec.payload, defaultMaxPayloadBytes, `${field}.payload`);
  return { name, cron, timezone, kind: spec.kind, payload, jobOptions, overlap, missed, catchUpLimit, graceMs };
}

/** A schedule name: safe in a dedupe key and on a command line. */
export function checkName(name: unknown, field = "name"): string {
  if (typeof name !== "string" || !/^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,199}$/.test(name)) {
    throw new ValidationError(field, `must be 1–200 letters, digits or _ . : / - (got ${JSON.stringify(name)})`);
  }
  return name;
}

function checkTimezone(timezone: unknown, field: string): string {
  if (typeof timezone !== "string" || timezone.length === 0) throw new ValidationError(field, "must be an IANA time zone name such as 'Europe/Berlin' or 'UTC'");
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    const hint = closest(timezone, Intl.supportedValuesOf("timeZone"));
    throw new ValidationError(field, `unknown time zone '${timezone}'${hint ? ` — did you mean '${hint}'?` : ""} (use an IANA name such as 'America/New_York', or 'UTC')`);
  }
}

function checkCron(cron: unknown, timezone: string, field: string): string {
  if (typeof cron !== "string" || cron.trim() === "") throw new ValidationError(field, "must be a cron expression such as '0 2 * * *' or '@daily'");
  const text = cron.trim().replace(/\s+/g, " ");
  let pattern: Cron;
  try {
    pattern = cronFor(text, timezone);
  } catch (error) {
    const reason = (error as Error).message.replace(/^CronPattern: /, "");
    throw new ValidationError(field, `'${cron}' is not a valid cron expression (${reason}); use 5 fields (minute hour day month weekday), 6 with seconds first, or @hourly/@daily/@weekly/@monthly/@yearly`);
  }
  if (pattern.nextRun(new Date(0)) === null) throw new ValidationError(field, `'${cron}' never matches a date`);
  return text;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  const hint = typeof value === "string" ? closest(value, allowed) : undefined;
  throw new ValidationError(field, `must be ${allowed.map((a) => `'${a}'`).join(", ")}${hint ? ` — did you mean '${hint}'?` : ""} (got ${JSON.stringify(value)})`);
}
