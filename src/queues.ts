/**
 * Named queues and pausing: queue names, a worker's queues and their concurrency, and
 * pausing or resuming a queue or a kind (`errand.pause`, `errand.resume`, `errand pause`).
 */
import { defaultConcurrency, defaultQueue } from "./defaults.js";
import type { Driver } from "./driver/types.js";
import { ValidationError } from "./errors.js";
import { maxKindLength } from "./enqueue.js";
import { queueQueriesFor } from "./sql/queues.js";
import { checkQueueName, checkText, integerIn } from "./validate.js";

/** Most handlers one queue of a worker runs at once (as for `concurrency`). */
const maxQueueConcurrency = 10_000;

/**
 * A worker's queues and each one's concurrency, from its options: `queues` (name →
 * handlers at once), else the `default` queue with `concurrency`. Errors name the field.
 */
export function resolveWorkerQueues(queues: unknown, concurrency: unknown): ReadonlyMap<string, number> {
  if (queues === undefined) return new Map([[defaultQueue, integerIn(concurrency ?? defaultConcurrency, "concurrency", 1, maxQueueConcurrency)]]);
  if (concurrency !== undefined) throw new ValidationError("concurrency", "give concurrency or queues, not both: with queues, each queue has its own concurrency");
  if (typeof queues !== "object" || queues === null || Array.isArray(queues)) throw new ValidationError("queues", "must be an object mapping queue name → concurrency, e.g. { email: 10, media: 2 }");
  const resolved = new Map<string, number>();
  for (const [name, n] of Object.entries(queues)) {
    resolved.set(checkQueueName(name, `queues.${name}`), integerIn(n, `queues.${name}`, 1, maxQueueConcurrency));
  }
  if (resolved.size === 0) throw new ValidationError("queues", "must name at least one queue");
  return resolved;
}

/**
 * Adds one `--queue name=concurrency` flag (or a bare `name`: `fallback` handlers) to the
 * queues so far; commander calls it once per flag. A malformed one is a ValidationError
 * naming `--queue`.
 */
export function parseQueueFlag(text: string, queues: Record<string, number> | undefined, fallback = defaultConcurrency): Record<string, number> {
  const match = /^([^=]*)(?:=(.*))?$/.exec(text)!;
  const name = checkQueueName(match[1], "--queue");
  let concurrency = fallback;
  if (match[2] !== undefined) {
    if (!/^\d+$/.test(match[2])) throw new ValidationError("--queue", `must be name=concurrency with a whole number of handlers, e.g. email=10 (got ${JSON.stringify(text)})`);
    concurrency = integerIn(Number(match[2]), "--queue", 1, maxQueueConcurrency);
  }
  if (queues && name in queues) throw new ValidationError("--queue", `queue '${name}' is given twice`);
  return { ...queues, [name]: concurrency };
}

/** What to pause or resume: one queue or one kind. */
export type PauseTarget<Kind extends string = string> = { readonly queue: string } | { readonly kind: Kind };

/** The queues and kinds paused now, with when they were paused. */
export interface Paused {
  readonly queues: readonly { readonly name: string; readonly pausedAt: Date }[];
  readonly kinds: readonly { readonly name: string; readonly pausedAt: Date }[];
}

/** The scope and name of a pause target, checked (the error names `queue` or `kind`). */
export function checkPauseTarget(target: unknown): ["queue" | "kind", string] {
  if (typeof target !== "object" || target === null) throw new ValidationError("target", "must be { queue } or { kind }");
  const keys = Object.keys(target);
  if (keys.length !== 1 || !(keys[0] === "queue" || keys[0] === "kind")) throw new ValidationError("target", `must be { queue } or { kind } (got keys ${JSON.stringify(keys)})`);
  if ("queue" in target) return ["queue", checkQueueName(target.queue, "queue")];
  return ["kind", checkText((target as { kind: unknown }).kind, "kind", { maxLength: maxKindLength })];
}

/**
 * Pauses or resumes a queue or kind; resolves true when that changed something (false:
 * it was paused, or running, already). Workers hear of it through a notice at commit.
 */
export async function setPaused(driver: Driver, schema: string, target: PauseTarget, paused: boolean): Promise<boolean> {
  const [scope, name] = checkPauseTarget(target);
  const queries = queueQueriesFor(schema);
  const { rows } = await driver.run<{ changed: boolean }>(paused ? queries.pause : queries.resume, [scope, name]);
  return rows[0]!.changed;
}

/** The queues and kinds paused now. */
export async function readPaused(driver: Driver, schema: string): Promise<Paused> {
  const { rows } = await driver.run<{ scope: string; name: string; paused_at: Date | string }>(queueQueriesFor(schema).listPauses, []);
  const pick = (scope: string) => rows.filter((row) => row.scope === scope).map((row) => ({ name: row.name, pausedAt: new Date(row.paused_at) }));
  return { queues: pick("queue"), kinds: pick("kind") };
}

/** One queue's figures. */
export interface QueueDepth {
  /** Ready and due now. */
  readonly ready: number;
  /** Ready but due later. */
  readonly scheduled: number;
  readonly running: number;
  /** Paused: workers start none of its jobs. */
  readonly paused: boolean;
  /** Its global concurrency limit (`errand.limits.setQueue`), to read beside `running`; null: none. */
  readonly limit: number | null;
}

/** The queues paused or limited (their jobs are counted by stats), and the paused kinds, both in name order. */
export async function readQueueSettings(driver: Driver, schema: string): Promise<{ queues: Map<string, { paused: boolean; limit: number | null }>; pausedKinds: string[] }> {
  const { rows } = await driver.run<{ scope: string; name: string; concurrency: number | null }>(queueQueriesFor(schema).workerGates, []);
  const queues = new Map<string, { paused: boolean; limit: number | null }>();
  for (const { scope, name, concurrency } of rows) {
    if (scope === "kind") continue;
    const queue = queues.get(name) ?? { paused: false, limit: null };
    queues.set(name, scope === "queue" ? { ...queue, paused: true } : { ...queue, limit: Number(concurrency) });
  }
  return { queues, pausedKinds: rows.filter((row) => row.scope === "kind").map((row) => row.name) };
}
