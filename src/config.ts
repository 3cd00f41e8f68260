import { ValidationError } from "./errors.js";
import { maxKindLength } from "./enqueue.js";
import { type KindOptions, resolveKinds } from "./options.js";
import { type ScheduleSpec, resolveSchedule } from "./schedules/spec.js";
import { checkKeys, checkText } from "./validate.js";
import type { Handler, Handlers } from "./worker/handlers.js";
import type { WorkerOptions } from "./worker/worker.js";
import { resolveWorkerOptions } from "./worker/worker-options.js";

/** One job kind: its settings ({@link KindOptions}) and, where this kind runs, its handler. */
export interface KindConfig extends KindOptions {
  /** Runs each job of this kind. Leave it out in a module that only enqueues. */
  readonly handler?: Handler<never>;
}

/**
 * Worker settings that belong to the application rather than to one process. A process's
 * own settings (`workerId`, `onEvent`) and command-line flags are added where it starts.
 */
export type WorkerConfig = Pick<WorkerOptions, "concurrency" | "queues" | "prefetch" | "leaseMs" | "pollIntervalMs" | "shutdownTimeoutMs" | "heartbeatIntervalMs" | "rescueIntervalMs">;

/**
 * What an application's jobs are: their kinds (settings and handlers), their schedules
 * and how its workers run. One module describes them, and both the application and
 * `errand worker --config` read it.
 */
export interface ErrandConfig {
  /** Job kinds by name. */
  readonly kinds?: Readonly<Record<string, KindConfig>>;
  /** Recurring jobs; `errand worker` declares them at start (declaring is idempotent). */
  readonly schedules?: readonly ScheduleSpec[];
  /** Worker settings; command-line flags override them. */
  readonly worker?: WorkerConfig;
}

const configKeys = ["kinds", "schedules", "worker"];
const kindKeys = ["maxAttempts", "retry", "leaseMs", "priority", "queue", "concurrencyKey", "handler"];
const workerKeys = ["concurrency", "queues", "prefetch", "leaseMs", "pollIntervalMs", "shutdownTimeoutMs", "heartbeatIntervalMs", "rescueIntervalMs"];

/**
 * Checks a config (every error is a {@link ValidationError} naming the field, e.g.
 * `kinds.email.retry.baseDelay: unknown option — did you mean 'baseDelayMs'?`) and returns
 * it with `kinds`, `schedules` and `worker` filled in, so `config.schedules` can be passed
 * on as it is. The result is the same object shape: calling it again is harmless.
 *
 * @example
 * ```ts
 * // errand.config.js
 * export default defineConfig({
 *   kinds: { send_email: { retry: { baseDelayMs: 5_000 }, leaseMs: 60_000, handler: sendEmail } },
 *   schedules: [{ name: "nightly-digest", cron: "0 2 * * *", kind: "send_digest" }],
 *   worker: { concurrency: 20 },
 * });
 * ```
 */
export function defineConfig<C extends ErrandConfig>(config: C): C & Required<ErrandConfig> {
  if (!isObject(config)) throw new ValidationError("config", "must be an object with kinds, schedules and worker");
  checkKeys(config, "", configKeys);
  const kinds = config.kinds ?? {};
  if (!isObject(kinds)) throw new ValidationError("kinds", "must be an object mapping kind → { handler, retry, leaseMs, maxAttempts, priority }");
  for (const [kind, settings] of Object.entries(kinds)) {
    checkText(kind, "kinds", { maxLength: maxKindLength });
    if (!isObject(settings)) throw new ValidationError(`kinds.${kind}`, "must be an object such as { handler, retry, leaseMs }");
    checkKeys(settings, `kinds.${kind}`, kindKeys);
    if (settings.handler !== undefined && typeof settings.handler !== "function") throw new ValidationError(`kinds.${kind}.handler`, "must be a function (payload, ctx) => …");
  }
  const resolvedKinds = resolveKinds(kindsOf(config));
  const schedules: readonly ScheduleSpec[] = config.schedules ?? [];
  if (!Array.isArray(schedules)) throw new ValidationError("schedules", "must be an array of schedules");
  const names = new Set<string>();
  schedules.forEach((spec: ScheduleSpec, i) => {
    const { name } = resolveSchedule(spec, `schedules[${i}]`);
    if (names.has(name)) throw new ValidationError(`schedules[${i}].name`, `'${name}' is declared twice`);
    names.add(name);
  });
  const worker = config.worker ?? {};
  if (!isObject(worker)) throw new ValidationError("worker", "must be an object such as { concurrency: 20 }");
  checkKeys(worker, "worker", workerKeys);
  try {
    resolveWorkerOptions({ ...worker, handlers: {} }, resolvedKinds);
  } catch (error) {
    throw error instanceof ValidationError ? new ValidationError(`worker.${error.field}`, error.message.slice(error.field.length + 2)) : error;
  }
  return { ...config, kinds, schedules, worker };
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The kinds' settings without their handlers: what `Errand.open({ kinds })` takes, so
 * jobs enqueued by the application get the same attempts, backoff, lease and priority.
 */
export function kindsOf(config: ErrandConfig): Record<string, KindOptions> {
  const kinds: Record<string, KindOptions> = {};
  for (const [kind, { handler: _handler, ...settings }] of Object.entries(config.kinds ?? {})) kinds[kind] = settings;
  return kinds;
}

/** The kinds' handlers, for `errand.worker({ handlers })`; kinds without one are left out. */
export function handlersOf(config: ErrandConfig): Handlers {
  const handlers: Record<string, Handler<never>> = {};
  for (const [kind, { handler }] of Object.entries(config.kinds ?? {})) if (handler !== undefined) handlers[kind] = handler;
  return handlers;
}
