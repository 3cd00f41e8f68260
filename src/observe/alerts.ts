import { ValidationError } from "../errors.js";
import { Repeater, type Service } from "../maintenance/service.js";
import { checkKeys } from "../validate.js";
import { humanAge } from "../human-format.js";
import { type IncidentStore, memoryIncidents } from "./incidents.js";
import type { KindStats, QueueStats } from "./stats.js";

/** The alert rules. Every rule is on by default; `false` turns one off. */
export interface AlertRules {
  /** Any dead job: fires when a kind has dead jobs, resolves when a person has retried or discarded them all. Default on. */
  readonly deadJobs?: boolean;
  /** Fires when a kind's oldest due job has waited longer than this. Default 15 minutes. */
  readonly oldestReadyMs?: number | false;
  /** Fires when a kind's failure rate over the last hour exceeds `threshold` (default 0.25) with at least `minAttempts` (default 20) attempts. */
  readonly failureRate?: { readonly threshold?: number; readonly minAttempts?: number } | false;
}

/** One notification: an incident opening (`firing`) or ending (`resolved`). */
export interface Alert {
  readonly status: "firing" | "resolved";
  readonly rule: "dead_jobs" | "oldest_ready" | "failure_rate";
  readonly kind: string;
  /** `rule:kind`, the incident's identity. */
  readonly key: string;
  /** One line for a person. */
  readonly message: string;
  /** When the incident opened (the database's time when a table store is used). */
  readonly openedAt: Date;
  /** The stats snapshot's time. */
  readonly at: Date;
}

/** Sends alerts somewhere: a webhook, Telegram, a pager. Throwing means "not delivered, try again". */
export interface Notifier {
  notify(alert: Alert): Promise<void>;
}

interface Condition {
  readonly rule: Alert["rule"];
  readonly kind: string;
  readonly message: string;
}

/** The conditions true in `stats` under `rules`, by incident key. */
export function evaluateRules(stats: QueueStats, rules: AlertRules = {}): Map<string, Condition> {
  checkKeys(rules, "rules", ["deadJobs", "oldestReadyMs", "failureRate"]);
  const oldestMs = rules.oldestReadyMs === undefined ? 15 * 60_000 : rules.oldestReadyMs;
  if (oldestMs !== false && (typeof oldestMs !== "number" || !(oldestMs > 0))) throw new ValidationError("rules.oldestReadyMs", "must be a positive number of milliseconds or false");
  const rate = rules.failureRate === false ? false : { threshold: 0.25, minAttempts: 20, ...rules.failureRate };
  if (rate && !(rate.threshold >= 0 && rate.threshold < 1)) throw new ValidationError("rules.failureRate.threshold", "must be from 0 to below 1");
  const found = new Map<string, Condition>();
  const add = (rule: Condition["rule"], kind: string, message: string) => found.set(`${rule}:${kind}`, { rule, kind, message });
  for (const [kind, s] of Object.entries<KindStats>(stats.kinds)) {
    if (rules.deadJobs !== false && s.dead > 0) {
      add("dead_jobs", kind, `${s.dead} dead ${s.dead === 1 ? "job" : "jobs"} of kind '${kind}' ${s.dead === 1 ? "waits" : "wait"} for a person: errand dead list --kind ${kind}`);
    }
    if (oldestMs !== false && s.oldestReadyAgeMs !== null && s.oldestReadyAgeMs > oldestMs) {
      add("oldest_ready", kind, `the oldest ready job of kind '${kind}' has waited ${humanAge(s.oldestReadyAgeMs)} (limit ${humanAge(oldestMs)}; ${s.ready} ready, ${s.running} running)`);
    }
    const hour = s.lastHour;
    if (rate && hour.failureRate !== null && hour.completed + hour.failed >= rate.minAttempts && hour.failureRate > rate.threshold) {
      add("failure_rate", kind, `${Math.round(hour.failureRate * 100)}% of attempts of kind '${kind}' failed in the last hour (${hour.failed} of ${hour.completed + hour.failed}; limit ${Math.round(rate.threshold * 100)}%)`);
    }
  }
  return found;
}

/** Options of {@link Alerter}. */
export interface AlerterOptions {
  /** Where the figures come from, usually `() => errand.stats()`. */
  readonly stats: () => Promise<QueueStats>;
  readonly notifiers: readonly Notifier[];
  readonly rules?: AlertRules;
  /** Open incidents. Default in memory; `tableIncidents(driver, schema)` shares them between processes. */
  readonly store?: IncidentStore;
  /** Time between checks. Default 30 s. */
  readonly intervalMs?: number;
  /** Errors: a failed stats query or an undelivered notification (retried at the next check). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Checks the rules against the stats and notifies once when an incident opens and once
 * when it resolves, never on every poll. A {@link Service}: `start()`, `stop()`, `runOnce()`.
 * `errand.alerter()` creates one for that database (stats and an incidents table), which
 * `errand.close()` stops.
 *
 * @example
 * ```ts
 * const alerter = errand.alerter({ notifiers: [telegramNotifier({ token, chatId })] });
 * await alerter.start();
 * ```
 */
export class Alerter implements Service<Alert[]> {
  readonly #options: AlerterOptions;
  readonly #store: IncidentStore;
  readonly #onError: (error: unknown) => void;
  readonly #repeater: Repeater;

  constructor(options: AlerterOptions) {
    checkKeys(options, "", ["stats", "notifiers", "rules", "store", "intervalMs", "onError"]);
    if (!Array.isArray(options.notifiers) || options.notifiers.length === 0) throw new ValidationError("notifiers", "give at least one notifier");
    evaluateRules({ at: new Date(0), total: emptyKind, kinds: {}, queues: {}, pausedKinds: [], limits: [], unserved: [] }, options.rules); // validates the rules now
    this.#options = options;
    this.#store = options.store ?? memoryIncidents();
    this.#onError = options.onError ?? (() => {});
    this.#repeater = new Repeater(() => this.runOnce().then(() => {}, this.#onError), options.intervalMs ?? 30_000);
  }

  /** Checks once; returns the notifications delivered. */
  async runOnce(): Promise<Alert[]> {
    const stats = await this.#options.stats();
    const active = evaluateRules(stats, this.#options.rules);
    const sent: Alert[] = [];
    const open = new Map((await this.#store.list()).map((incident) => [incident.key, incident]));
    for (const [key, condition] of active) {
      if (open.has(key) || !(await this.#store.open(key, condition.message, stats.at))) continue;
      const alert: Alert = { status: "firing", ...condition, key, openedAt: stats.at, at: stats.at };
      if (await this.#deliver(alert)) sent.push(alert);
      else await this.#store.close(key); // not delivered: fire again at the next check
    }
    for (const [key, incident] of open) {
      if (active.has(key)) continue;
      const closed = await this.#store.close(key);
      if (!closed) continue;
      const [rule, ...kind] = key.split(":");
      const alert: Alert = { status: "resolved", rule: rule as Alert["rule"], kind: kind.join(":"), key, message: `resolved: ${incident.message}`, openedAt: closed.openedAt, at: stats.at };
      if (await this.#deliver(alert)) sent.push(alert);
      else await this.#store.open(key, incident.message, closed.openedAt); // resolve again at the next check
    }
    return sent;
  }

  async #deliver(alert: Alert): Promise<boolean> {
    const results = await Promise.allSettled(this.#options.notifiers.map((notifier) => notifier.notify(alert)));
    for (const result of results) if (result.status === "rejected") this.#onError(result.reason);
    return results.some((result) => result.status === "fulfilled");
  }

  /** Checks now and every `intervalMs`; resolves after the first check. */
  start(): Promise<void> {
    return this.#repeater.start();
  }

  /** Stops checking and waits for a check in progress. */
  stop(): Promise<void> {
    return this.#repeater.stop();
  }
}

const emptyWindow = { completed: 0, failed: 0, died: 0, timedOut: 0, cancelled: 0, failureRate: null };
const emptyKind: KindStats = { ready: 0, scheduled: 0, running: 0, done: 0, dead: 0, cancelled: 0, oldestReadyAgeMs: null, expiredLeases: 0, lastMinute: emptyWindow, lastHour: emptyWindow };
