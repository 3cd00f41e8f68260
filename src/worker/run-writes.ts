import { runOn } from "../driver/pg.js";
import type { Driver, Queryable } from "../driver/types.js";
import { ErrandError, ValidationError } from "../errors.js";
import { serialisePayload } from "../payload.js";
import type { Queries } from "../sql/jobs.js";
import type { Completer } from "./completer.js";
import type { ClaimedJob, RunWrites } from "./executor.js";

/**
 * Largest checkpoint accepted, in bytes of JSON. A checkpoint is progress (a cursor, a
 * page number, the ids done so far), not data: it is written whole each time and read by
 * every claim of its job.
 */
export const maxCheckpointBytes = 64 * 1024;

/**
 * The writes a handler makes through its context while it runs: `ctx.checkpoint(state)`
 * at once on the worker's connection, `ctx.complete(tx)` on the handler's own
 * transaction. Both are guarded like the completer's writes (this worker's lease, this
 * attempt), so a handler that lost its lease cannot write over the run that took over.
 */
export class HandlerWrites implements RunWrites {
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #workerId: string;
  readonly #completer: Completer;

  constructor(driver: Driver, queries: Queries, workerId: string, completer: Completer) {
    this.#driver = driver;
    this.#queries = queries;
    this.#workerId = workerId;
    this.#completer = completer;
  }

  async checkpoint(job: ClaimedJob, state: unknown): Promise<void> {
    // Checked whole before anything is sent: a bad state saves nothing and keeps the last one.
    const text = serialisePayload(state, Number.POSITIVE_INFINITY, "checkpoint");
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > maxCheckpointBytes) {
      throw new ValidationError("checkpoint", `is ${bytes} bytes of JSON, over the limit of ${maxCheckpointBytes}; save how far the job got (a cursor, an offset), not the data`);
    }
    const { rows } = await this.#driver.run(this.#queries.checkpoint, [job.id, job.attempt, this.#workerId, text]);
    if (rows.length === 0) throw this.#notHeld(job, "save its checkpoint");
  }

  async complete(job: ClaimedJob, tx: Queryable): Promise<void> {
    if (typeof (tx as Partial<Queryable> | null)?.query !== "function") {
      throw new ValidationError("tx", "is not a transaction errand can use: pass a pg client in BEGIN, a PGlite transaction, or fromPostgresJs/fromKysely/fromDrizzle of one");
    }
    const { rows } = await runOn(tx, this.#queries.completeInTransaction, [job.id, job.attempt, this.#workerId]);
    if (rows.length === 0) throw this.#notHeld(job, "complete it in this transaction");
    // From here the job is done if `tx` commits: the worker's own write of the outcome
    // finds nothing to do then, and must not report that as a lost lease.
    this.#completer.completedInTransaction(job);
  }

  #notHeld(job: ClaimedJob, what: string): ErrandError {
    const reason = this.#completer.isCompletedInTransaction(job)
      ? "it was completed with ctx.complete() already"
      : "its lease was lost, and another worker may be running it";
    return new ErrandError("lease_lost", `job ${job.id} cannot ${what}: it is no longer running on this worker for attempt ${job.attempt} (${reason})`);
  }
}
