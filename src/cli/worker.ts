import type { Command } from "commander";
import { kindsOf } from "../config.js";
import * as defaults from "../defaults.js";
import { resolveKinds } from "../options.js";
import type { WorkerEvent, WorkerOptions } from "../worker/worker.js";
import { resolveWorkerOptions } from "../worker/worker-options.js";
import { ValidationError } from "../errors.js";
import { parseQueueFlag } from "../queues.js";
import { InvalidArgumentError } from "commander";
import { startMetricsServer } from "../observe/metrics-server.js";
import { registerJetStreamGauges } from "../jetstream/metrics.js";
import { logSchedulerEvent } from "./schedules.js";
import { type DatabaseFlags, databaseLabel, inSeconds, intArg, logLine, openFromFlags, requireDatabase, secondsArg, withDatabase } from "./common.js";
import { findSources, loadSources, sourcePaths } from "./load-config.js";
import { type JetStreamFlags, jetstreamQueueOptions, withJetStream } from "./jetstream-flags.js";
import { jetstreamWorkers } from "./jetstream-worker.js";

interface WorkerFlags extends DatabaseFlags, JetStreamFlags {
  readonly config?: string;
  readonly handlers?: string;
  readonly concurrency?: number;
  readonly queue?: Record<string, number>;
  readonly prefetch?: number;
  readonly lease?: number;
  readonly heartbeatInterval?: number;
  readonly rescueInterval?: number;
  readonly workerId?: string;
  readonly shutdownTimeout?: number;
  readonly pollInterval?: number;
  readonly verbose?: boolean;
  readonly scheduler?: boolean;
  readonly pruner?: boolean;
  readonly metricsPort?: number;
  readonly metricsHost: string;
  readonly maxEventLoopLag?: number;
}

export function register(program: Command): void {
  withDatabase(
    withJetStream(
      program
        .command("worker")
        .description("run jobs until SIGTERM or SIGINT (graceful), a second SIGINT exits at once")
        .option("--config <path>", "module whose default export is defineConfig({ kinds, schedules, worker }): kinds' settings and handlers, schedules to declare (default ./errand.config.js, .mjs, .cjs, .ts or .mts if present)")
        .option("--handlers <path>", "module whose default export maps kind → async (payload, ctx) => … (alone, or adding handlers to --config)")
        .option("--concurrency <n>", `handlers running at once (default ${defaults.defaultConcurrency})`, intArg(1, 10_000))
        .option(
          "--queue <name=concurrency>",
          `serve this queue with this many handlers at once (repeat for more queues: --queue email=10 --queue media=2; a bare name gets ${defaults.defaultConcurrency}); default: the '${defaults.defaultQueue}' queue with --concurrency`,
          (value: string, previous: Record<string, number> | undefined) => {
            try {
              return parseQueueFlag(value, previous);
            } catch (error) {
              if (error instanceof ValidationError) throw new InvalidArgumentError(error.message.slice(error.field.length + 2));
              throw error;
            }
          },
        )
        .option("--prefetch <n>", "jobs claimed ahead of free slots (default adaptive: a quarter second of recent throughput, up to 2000, none when nothing finished lately; buffered jobs unstarted after 1 s go back)", intArg(0, 10_000))
        .option("--lease <seconds>", `lease per job, extended by heartbeats (default ${inSeconds(defaults.defaultLeaseMs)}); with --jetstream, the consumer's ack wait (default 30)`, secondsArg(false))
        .option("--heartbeat-interval <seconds>", "how often leases are extended (default a third of the lease)", secondsArg(false))
        .option("--rescue-interval <seconds>", `how often expired leases are rescued, 0 = never (default ${inSeconds(defaults.defaultRescueIntervalMs)})`, secondsArg())
        .option("--worker-id <id>", "this worker's name in locked_by (default host:pid:random)")
        .option("--shutdown-timeout <seconds>", `how long running jobs may finish on shutdown (default ${inSeconds(defaults.defaultShutdownTimeoutMs)})`, secondsArg())
        .option("--poll-interval <seconds>", `fallback poll when no notification arrives (default ${inSeconds(defaults.defaultPollIntervalMs)})`, secondsArg(false))
        .option("--verbose", "also log every successful job")
        .option("--no-scheduler", "do not enqueue due schedule slots from this process (default: run the scheduler; safe in every worker)")
        .option("--no-pruner", `do not delete done jobs older than ${defaults.defaultRetentionMs / 86_400_000} days from this process (default: purge hourly; safe in every worker)`)
        .option("--metrics-port <n>", "serve Prometheus /metrics on this port: queue gauges and this worker's job metrics; and /healthz, a liveness probe", intArg(0, 65_535))
        .option("--metrics-host <address>", "address the metrics server binds; 0.0.0.0 for a scraper or probe on another host (/metrics has no authentication)", defaults.defaultMetricsHost)
        .option("--max-event-loop-lag <seconds>", "/healthz answers 503 when the event loop was blocked longer than this in the last 10 s (default 1)", secondsArg(false)),
      "run this process's jobs from",
    ),
    { embeddedByDefault: false },
  ).action(async (flags: WorkerFlags) => {
    // Signals are handled from the first moment: a SIGTERM while the worker is still
    // connecting must also end in a clean exit 0, not the default kill.
    let signals = 0;
    let stop: (() => Promise<void>) | undefined = undefined; // set once connected
    let shutdownTimeoutMs = flags.shutdownTimeout ?? defaults.defaultShutdownTimeoutMs; // the config's, once loaded
    const exitAfter = (work: Promise<void>) =>
      work.then(
        () => process.exit(0),
        (error: unknown) => {
          logLine({ level: "error", event: "shutdown_failed", error: String(error) });
          process.exit(1);
        },
      );
    const shutdown = (signal: NodeJS.Signals) => {
      if (++signals > 1) {
        logLine({ level: "warn", event: "forced_exit", signal });
        process.exit(130);
      }
      logLine({ level: "info", event: "shutting_down", signal });
      // Last resort if closing hangs (a connection that never answers): the jobs still
      // come back after their leases, as after a crash.
      setTimeout(() => {
        logLine({ level: "error", event: "shutdown_overran", signal });
        process.exit(1);
      }, shutdownTimeoutMs + 10_000).unref();
      if (stop) void exitAfter(stop());
    };
    process.on("SIGTERM", shutdown);
    process.on("SIGINT", shutdown);

    // Before anything is loaded or opened: a worker must not guess its database.
    requireDatabase(flags, "errand worker");
    const sources = findSources(flags);
    logLine({ level: "info", event: "starting", database: databaseLabel(flags), schema: flags.schema ?? defaults.defaultSchema, ...sourcePaths(sources) });
    const { config, handlers } = await loadSources(sources);
    const kinds = kindsOf(config);
    // A flag replaces the config's way of sizing the worker: --queue its queues and concurrency, --concurrency its queues.
    const { concurrency: configConcurrency, queues: configQueues, ...fromConfig } = config.worker;
    const sizing = flags.queue !== undefined ? {} : flags.concurrency !== undefined ? {} : { ...(configConcurrency !== undefined ? { concurrency: configConcurrency } : {}), ...(configQueues !== undefined ? { queues: configQueues } : {}) };
    const options: WorkerOptions = {
      ...fromConfig,
      ...sizing,
      handlers,
      ...(flags.queue !== undefined ? { queues: flags.queue } : {}),
      ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      ...(flags.prefetch !== undefined ? { prefetch: flags.prefetch } : {}),
      ...(flags.lease !== undefined ? { leaseMs: flags.lease } : {}),
      ...(flags.heartbeatInterval !== undefined ? { heartbeatIntervalMs: flags.heartbeatInterval } : {}),
      ...(flags.rescueInterval !== undefined ? { rescueIntervalMs: flags.rescueInterval } : {}),
      ...(flags.workerId !== undefined ? { workerId: flags.workerId } : {}),
      ...(flags.shutdownTimeout !== undefined ? { shutdownTimeoutMs: flags.shutdownTimeout } : {}),
      ...(flags.pollInterval !== undefined ? { pollIntervalMs: flags.pollInterval } : {}),
      onEvent: (event) => {
        logEvent(event, flags.verbose === true);
        metrics?.onEvent(event);
      },
    };
    resolveWorkerOptions(options, resolveKinds(kinds)); // bad flags fail here, before connecting
    shutdownTimeoutMs = options.shutdownTimeoutMs ?? shutdownTimeoutMs;
    // --lease is the JetStream consumer's ack wait: the lease of that transport.
    const jetstream = jetstreamQueueOptions(flags, flags.lease);
    if (jetstream.length > 0) refusePostgresOnlyFlags(flags);
    const errand = await openFromFlags(flags, {
      kinds,
      onConnectionError: (error) => logLine({ level: "warn", event: "connection_error", error: error.message }),
    });
    // Declaring is idempotent (a schedule keeps its next slot and pause), so every worker
    // process declares at start, even one run with --no-scheduler.
    if (config.schedules.length > 0) {
      const declared = await errand.schedules.declare(config.schedules);
      logLine({ level: "info", event: "schedules_declared", schedules: declared.map((schedule) => schedule.name) });
    }
    const health = flags.maxEventLoopLag === undefined ? undefined : { maxEventLoopLagMs: flags.maxEventLoopLag };
    const metrics = flags.metricsPort === undefined ? undefined : await startMetricsServer({ port: flags.metricsPort, host: flags.metricsHost, stats: () => errand.stats(), ...(health ? { health } : {}) });
    if (metrics) logLine({ level: "info", event: "metrics_listening", host: flags.metricsHost, port: metrics.port, path: "/metrics", health: "/healthz" });
    const js = jetstream.length > 0 ? jetstreamWorkers(errand, jetstream, { handlers, concurrency: flags.concurrency ?? configConcurrency, shutdownTimeoutMs, verbose: flags.verbose === true }) : undefined;
    if (js && metrics) registerJetStreamGauges(metrics.registry, js.queues);
    const worker = js ?? errand.worker(options);
    const scheduler = flags.scheduler === false ? undefined : errand.schedules.scheduler({ onEvent: logSchedulerEvent });
    const purger =
      flags.pruner === false
        ? undefined
        : errand.purger({
            onPurge: (result) => result.done + result.cancelled + result.dead > 0 && logLine({ level: "info", event: "pruned", ...result }),
            onError: (error) => logLine({ level: "error", event: "error", during: "prune", error: String(error) }),
          });
    stop = () =>
      Promise.all([worker.stop(), scheduler?.stop(), purger?.stop()])
        .then(() => metrics?.close())
        .then(() => errand.close());
    if (signals > 0) {
      await exitAfter(stop()); // asked to stop while connecting: nothing was claimed
      return;
    }
    await scheduler?.start();
    void purger?.start(); // not awaited: a first purge of a large table must not delay the worker
    await worker.start();
  });
}

/** With --jetstream the process runs only JetStream queues: the PostgreSQL worker's own settings would do nothing. */
function refusePostgresOnlyFlags(flags: WorkerFlags): void {
  const pgOnly = { queue: "--queue", prefetch: "--prefetch", heartbeatInterval: "--heartbeat-interval", rescueInterval: "--rescue-interval", pollInterval: "--poll-interval" } as const;
  for (const [key, flag] of Object.entries(pgOnly)) {
    if (flags[key as keyof typeof pgOnly] !== undefined) throw new InvalidArgumentError(`${flag} applies to PostgreSQL queues; with --jetstream this process runs only the JetStream queues (run another worker for the PostgreSQL ones)`);
  }
}

function logEvent(event: WorkerEvent, verbose: boolean): void {
  switch (event.type) {
    case "job_done":
      if (verbose) logLine({ level: "info", event: event.type, job: event.job.id, kind: event.job.kind, attempt: event.job.attempt, ms: Math.round(event.durationMs) });
      return;
    case "job_failed":
      logLine({ level: "warn", event: event.type, job: event.job.id, kind: event.job.kind, attempt: event.job.attempt, retryInMs: Math.round(event.retryInMs), error: event.error.split("\n")[0] });
      return;
    case "job_dead":
      logLine({ level: "error", event: event.type, job: event.job.id, kind: event.job.kind, attempt: event.job.attempt, error: event.error.split("\n")[0] });
      return;
    case "job_snoozed":
      logLine({ level: "info", event: event.type, job: event.job.id, kind: event.job.kind, delayMs: event.delayMs });
      return;
    case "error":
      logLine({ level: "error", event: "error", during: event.during, error: event.error instanceof Error ? event.error.message : String(event.error) });
      return;
    default:
      logLine({ level: "info", event: event.type, ...("workerId" in event ? { worker: event.workerId } : {}), ...withoutType(event) });
  }
}

function withoutType(event: WorkerEvent): Record<string, unknown> {
  const { type: _type, ...rest } = event as { type: string } & Record<string, unknown>;
  return rest;
}
