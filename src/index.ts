export { Errand, type ErrandOptions, type EnqueueOptions, type EnqueueResult, type JobSpec, type DeadSelector, type SqlClient } from "./client.js";
export { ErrandError, ValidationError, PermanentError, UnknownKindError, permanent } from "./errors.js";
export type { Job, JobStatus, JobError } from "./job.js";
export type { KindOptions } from "./options.js";
export { snooze, type Snooze } from "./outcomes.js";
export type { Json } from "./payload.js";
export { type RetryPolicy, defaultRetryPolicy, defaultMaxAttempts, retryDelay } from "./retry-policy.js";
export type { Driver, Queryable, Statement, Transaction, QueryResult } from "./driver/types.js";
export type { Worker, WorkerOptions, WorkerEvent } from "./worker/worker.js";
export type { Handler, Handlers, JobContext } from "./worker/handlers.js";
export type { ClaimedJob } from "./worker/executor.js";
export { Schedules, type DeclareOptions } from "./maintenance/schedules.js";
export { Scheduler, type SchedulerOptions, type SchedulerEvent, type SchedulerTick } from "./maintenance/scheduler.js";
export type { ScheduleSpec, OverlapPolicy, MissedPolicy, ScheduleJobOptions } from "./maintenance/schedule-spec.js";
export type { ScheduleInfo } from "./maintenance/schedule-info.js";
export type { Clock } from "./clock.js";
/** The web dashboard: `createDashboard(errand)` returns a Hono app (its `fetch` is a request handler). */
export { createDashboard, type DashboardOptions, type DashboardAuth, authFromEnv } from "./dashboard/index.js";
