/**
 * `errand/testing`: test your handlers and enqueue logic without sleeps or a server.
 * A job's outcome is a value; tests drain the queue instead of waiting for a worker.
 *
 * - {@link openTestErrand} — an errand on a fresh in-memory database, migrated.
 * - {@link drain} — runs every due job (and the jobs they enqueue) until none is due.
 * - {@link advance} — moves not-yet-due jobs earlier, so retries and delays become due.
 * - {@link enqueued} — the jobs in the queue, filtered by kind, status and payload.
 *
 * @example
 * ```ts
 * import { advance, drain, enqueued, openTestErrand } from "errand/testing";
 *
 * const errand = await openTestErrand();
 * await errand.enqueue("send_receipt", { orderId: 1042 });
 * const result = await drain(errand, { send_receipt: async () => {} });
 * // result.done === 1; (await enqueued(errand, { status: "done" })).length === 1
 * await errand.close();
 * ```
 *
 * @module
 */
export { openTestErrand, type TestErrandOptions } from "./open-test-errand.js";
export { drain, type DrainOptions, type DrainResult, type DrainedJob, type DrainedRun, type DrainOutcome } from "./drain.js";
export { advance } from "./advance.js";
export { enqueued, type EnqueuedFilter } from "./enqueued.js";
