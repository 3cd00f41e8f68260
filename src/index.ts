/**
 * `errand`: the client, enqueue, workers, schedules, errors and types. Light to load: the
 * dashboard (Hono) is `errand/dashboard`, Prometheus is `errand/metrics`, test helpers are
 * `errand/testing`.
 *
 * @module
 */
export { Errand, type ErrandOptions, type EnqueueOptions, type EnqueueResult, type JobSpec, type DeadSelector, type DeadLetters, type TypedWorkerOptions, type SqlClient } from "./client.js";
export type { DedupeMode } from "./dedupe.js";
export {
  defineJobs,
  json,
  type JobMap,
  type JobsDefinition,
  type JobsOf,
  type JobOf,
  type Kind,
  type ByKind,
  type KindDefinition,
  type DefinedJobs,
  type DefinedPayload,
  type JsonPayload,
  type JsonMembers,
  type PayloadType,
  type PayloadField,
  type PayloadPattern,
  type UntypedJobs,
  type StandardSchemaV1,
  type StandardSchemaProps,
  type StandardSchemaResult,
  type StandardSchemaIssue,
  type SchemaOutput,
} from "./jobs.js";
export { ErrandError, type ErrandErrorCode, ValidationError, NotFoundError, PermanentError, UnknownKindError, permanent } from "./errors.js";
export type { Job, JobStatus, JobError } from "./job.js";
export type { Batch, BatchMember, BatchResult, BatchSpec, BatchJobSpec, BatchCallbackSpec, BatchCallbackKind, BatchCallbackOptions, BatchCallbackPayload, BatchSummary, ListBatchesOptions } from "./batches.js";
export type { WaitOptions } from "./wait.js";
export type { KindOptions } from "./options.js";
export type { PauseTarget, Paused, QueueDepth } from "./queues.js";
export { defineConfig, kindsOf, handlersOf, type ErrandConfig, type KindConfig, type WorkerConfig } from "./config.js";
export { snooze, type Snooze } from "./outcomes.js";
export type { Json } from "./payload.js";
export { type RetryPolicy, retryDelay } from "./retry-policy.js";
export { defaultRetryPolicy, defaultMaxAttempts } from "./defaults.js";
export type { Driver, Queryable, Session, Statement, Transaction, QueryResult } from "./driver/types.js";
export type { Worker, WorkerOptions, WorkerEvent } from "./worker/worker.js";
export type { Handler, HandlerFor, Handlers, JobContext } from "./worker/handlers.js";
export type { ClaimedJob } from "./worker/executor.js";
export { isolated, type IsolatedHandler, type IsolatedOptions, type IsolationMode } from "./worker/isolated.js";
export { Limits, parseRate, type LimitOptions, type LimitInfo, type QueueLimitInfo, type Rate } from "./limits.js";
export { Schedules, type DeclareOptions } from "./schedules/schedules.js";
export { Scheduler, type SchedulerOptions, type SchedulerEvent, type SchedulerTick } from "./schedules/scheduler.js";
export type { ScheduleSpec, ScheduleSettings, OverlapPolicy, MissedPolicy, ScheduleJobOptions } from "./schedules/spec.js";
export type { ScheduleInfo } from "./schedules/info.js";
export type { Clock } from "./clock.js";
export type { QueueStats, KindStats, WindowStats, OutboxStats, UnservedJobs, JetStreamQueueReport } from "./observe/stats.js";
export { Purger, type PurgerOptions, type PurgeOptions, type PurgeResult, Pruner, type PrunerOptions, type PruneOptions, type PruneResult } from "./maintenance/purger.js";
export { defaultRetentionMs } from "./defaults.js";
export type { Rescuer, RescuerOptions, RescueResult } from "./maintenance/rescuer.js";
export type { Service } from "./maintenance/service.js";
export { Alerter, evaluateRules, type AlerterOptions, type AlertRules, type Alert, type Notifier } from "./observe/alerts.js";
export { memoryIncidents, tableIncidents, type IncidentStore, type OpenIncident } from "./observe/incidents.js";
export { webhookNotifier, telegramNotifier, type WebhookOptions, type TelegramOptions } from "./observe/notifiers.js";
export { retrySchedule, retryPlanText, capacity, capacityPlanText, type RetryStep, type RetryPlanOptions, type CapacityOptions } from "./planning.js";
export { fromPostgresJs, type PostgresJsSql } from "./driver/postgres-js.js";
export { fromKysely, type KyselyExecutor, type KyselyRawQuery } from "./driver/kysely.js";
export { fromDrizzle, type DrizzleDatabase, type DrizzleSqlHelper } from "./driver/drizzle.js";
export type { MessageSpec, PublishOptions, PublishResult } from "./outbox/publish.js";
export type { Relay, RelayOptions, RelayEvent, RelayResult } from "./outbox/relay.js";
export type { TransportOptions } from "./outbox/transport.js";
export { JetStreamQueue, type JetStreamQueueStats, type JetStreamStatsSource, type ErrandLike } from "./jetstream/queue.js";
export type { JetStreamQueueOptions } from "./jetstream/options.js";
export type { JetStreamEnqueueOptions } from "./jetstream/message.js";
export type { JetStreamWorker, JetStreamWorkerOptions, JetStreamWorkerEvent } from "./jetstream/worker.js";
