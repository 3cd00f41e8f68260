import type { Errand } from "../client.js";
import { ValidationError } from "../errors.js";
import { type JobRow, type JobStatus, toJob } from "../job.js";
import type { JobMap, JobOf, Kind, PayloadPattern, UntypedJobs } from "../jobs.js";
import { checkKeys } from "../validate.js";
import { serialisePayload } from "../payload.js";
import { testingQueriesFor } from "../sql/testing.js";

/** Which jobs {@link enqueued} returns; every field left out matches all jobs. Typed by the job map. */
export interface EnqueuedFilter<Jobs = UntypedJobs, K extends Kind<Jobs> = Kind<Jobs>> {
  /** Only jobs of this kind. */
  readonly kind?: K;
  /** Only jobs in this status (or any of these). */
  readonly status?: JobStatus | readonly JobStatus[];
  /** Only jobs whose payload contains this JSON (PostgreSQL `@>`: `{ orderId: 1042 }` matches `{ orderId: 1042, total: 5 }`). */
  readonly payload?: PayloadPattern<Jobs[K]>;
}

const statuses: readonly JobStatus[] = ["ready", "running", "done", "dead"];

/**
 * The jobs in the queue, oldest first, whatever ran them or not — for assertions such
 * as "this request enqueued one `send_receipt` job for order 1042". On a typed errand,
 * `kind` types the jobs' payloads and the `payload` pattern.
 *
 * @example
 * ```ts
 * import { enqueued, openTestErrand } from "errand/testing";
 *
 * const errand = await openTestErrand();
 * await errand.enqueue("send_receipt", { orderId: 1042, total: 59000 }); // e.g. from your request handler
 * const receipts = await enqueued(errand, { kind: "send_receipt", status: "ready" });
 * expect(receipts).toHaveLength(1);
 * expect(receipts[0]!.payload).toMatchObject({ orderId: 1042 });
 * expect(await enqueued(errand, { payload: { orderId: 1042 } })).toHaveLength(1);
 * await errand.close();
 * ```
 */
export async function enqueued<Jobs extends JobMap<Jobs>, K extends Kind<Jobs> = Kind<Jobs>>(errand: Errand<Jobs>, filter: EnqueuedFilter<Jobs, K> = {}): Promise<JobOf<Jobs, K>[]> {
  checkKeys(filter, "", ["kind", "status", "payload"]);
  const kind = filter.kind ?? null;
  if (kind !== null && typeof kind !== "string") throw new ValidationError("kind", "must be a string");
  const wanted = filter.status === undefined ? null : typeof filter.status === "string" ? [filter.status] : [...filter.status];
  for (const status of wanted ?? []) {
    if (!statuses.includes(status)) throw new ValidationError("status", `must be one of ${statuses.join(", ")} (got ${JSON.stringify(status)})`);
  }
  const payload = filter.payload === undefined ? null : serialisePayload(filter.payload, Number.MAX_SAFE_INTEGER, "payload");
  const { rows } = await errand.driver.run<JobRow>(testingQueriesFor(errand.schema).listJobs, [kind, wanted, payload]);
  return rows.map(toJob) as JobOf<Jobs, K>[];
}
