/**
 * `errand.cancel`: jobs cancelled for good, by ids (all or nothing) or by kind. The
 * statement (`cancel` in src/sql/jobs.ts) marks them; a running job's worker hears of it
 * at its next heartbeat, which a notice asks for at once.
 */
import { selectorFilter } from "./dead-letters.js";
import type { Driver } from "./driver/types.js";
import { ErrandError, NotFoundError, ValidationError } from "./errors.js";
import { queriesFor } from "./sql/jobs.js";

/**
 * Cancels the selected jobs and returns their ids. By ids, the statement changes nothing
 * unless every id is a ready or running job, and its rows say why: an unknown id becomes a
 * NotFoundError, a finished job an ErrandError `"job_finished"`.
 */
export async function cancelJobs(driver: Driver, schema: string, selector: { readonly ids: readonly (string | number)[] } | { readonly kind: string }): Promise<string[]> {
  if (typeof selector === "object" && selector !== null && "all" in selector) throw new ValidationError("selector", "must be { ids } or { kind }");
  const [ids, kind] = selectorFilter(selector);
  const { rows } = await driver.run<{ id: string; status: string; cancelled: boolean }>(queriesFor(schema).cancel, [ids, kind]);
  if (ids) {
    const found = new Set(rows.map((row) => String(row.id)));
    const missing = [...new Set(ids)].filter((id) => !found.has(id));
    if (missing.length > 0) throw new NotFoundError(`no job with id ${missing.join(", ")}; nothing was cancelled`);
    const finished = rows.filter((row) => !row.cancelled);
    if (finished.length > 0) {
      throw new ErrandError("job_finished", `cannot cancel ${finished.map((row) => `job ${row.id} (${row.status})`).join(", ")}: already finished; nothing was cancelled`);
    }
  }
  return rows.map((row) => String(row.id));
}
