import type { Errand } from "../client.js";
import { nonNegativeMs } from "../validate.js";
import { testingQueriesFor } from "../sql/testing.js";

/**
 * Moves time forward for the queue: every `ready` job that is not yet due (a retry
 * waiting out its backoff, a snoozed job, a `delay` or `runAt` in the future) has its
 * `run_at` moved `ms` earlier. The database stays the clock — nothing fakes `Date` —
 * so call {@link drain} afterwards to run what became due. Returns how many jobs moved.
 *
 * Only job rows move: leases of running jobs and schedules' next runs are left alone.
 *
 * @example
 * ```ts
 * import { advance, drain, openTestErrand } from "errand/testing";
 *
 * const errand = await openTestErrand();
 * const handlers = { send_reminder: async () => {} };
 * await errand.enqueue("send_reminder", { userId: 7 }, { delay: 24 * 3_600_000 });
 * (await drain(errand, handlers)).done;       // 0 — not due yet
 * await advance(errand, 24 * 3_600_000);      // a day later…
 * (await drain(errand, handlers)).done;       // 1
 * await errand.close();
 * ```
 */
export async function advance(errand: Errand, ms: number): Promise<number> {
  const { rows } = await errand.driver.run<{ id: string }>(testingQueriesFor(errand.schema).advance, [nonNegativeMs(ms, "ms")]);
  return rows.length;
}
