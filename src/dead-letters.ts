/**
 * Dead letters (`errand.dead`): list the dead jobs, put them back to `ready`, or discard
 * them; and the selector that picks jobs by ids or kind, which `errand.cancel` shares.
 */
import { defaultDeadListLimit } from "./defaults.js";
import type { Driver } from "./driver/types.js";
import { maxKindLength } from "./enqueue.js";
import { NotFoundError, ValidationError } from "./errors.js";
import { type JobRow, toJob } from "./job.js";
import type { JobOf, Kind, UntypedJobs } from "./jobs.js";
import { queriesFor } from "./sql/jobs.js";
import { checkId, checkKeys, checkText, integerIn } from "./validate.js";

/** Which dead jobs a retry or discard applies to. */
export type DeadSelector = { readonly ids: readonly (string | number)[] } | { readonly kind: string } | { readonly all: true };

/** Dead letters, `errand.dead`: the jobs a person must look at. */
export interface DeadLetters<Jobs = UntypedJobs> {
  /** Dead jobs, oldest id first; filter by kind; page with `afterId`. */
  list(options?: { readonly kind?: Kind<Jobs>; readonly limit?: number; readonly afterId?: string | number }): Promise<JobOf<Jobs>[]>;
  /**
   * Puts dead jobs back to `ready` with attempts reset (their error history kept).
   * Returns the ids retried. Explicit ids that are not dead jobs raise an error naming them, and nothing changes.
   */
  retry(selector: DeadSelector): Promise<string[]>;
  /** Deletes dead jobs. Returns the ids discarded; same rules as `retry`. */
  discard(selector: DeadSelector): Promise<string[]>;
}

/** The dead letters of the errand tables in `schema`. */
export function deadLetters<Jobs>(driver: Driver, schema: string): DeadLetters<Jobs> {
  const queries = queriesFor(schema);
  const actOnDead = async (query: "retryDead" | "discardDead", selector: DeadSelector): Promise<string[]> => {
    const [ids, kind] = selectorFilter(selector);
    return driver.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: string }>(queries[query].text, [ids, kind]);
      const done = rows.map((row) => String(row.id));
      if (ids) {
        const missing = ids.filter((id) => !done.includes(id));
        if (missing.length > 0) {
          throw new NotFoundError(`no dead job with id ${missing.join(", ")} (it does not exist or is not dead); nothing was changed`);
        }
      }
      return done;
    });
  };
  return {
    list: async (options = {}) => {
      checkKeys(options, "", ["kind", "limit", "afterId"]);
      const kind = options.kind === undefined ? null : checkText(options.kind, "kind", { maxLength: maxKindLength });
      const limit = integerIn(options.limit ?? defaultDeadListLimit, "limit", 1, 10_000);
      const { rows } = await driver.run<JobRow>(queries.listDead, [kind, limit, options.afterId === undefined ? "0" : checkId(options.afterId, "afterId")]);
      return rows.map(toJob) as JobOf<Jobs>[];
    },
    retry: (selector) => actOnDead("retryDead", selector),
    discard: (selector) => actOnDead("discardDead", selector),
  };
}

/**
 * A selector as the statements' parameters: the ids (null: not by id) and the kind (null:
 * every kind). Checked here, so a malformed one is a ValidationError naming the field.
 */
export function selectorFilter(selector: DeadSelector): [string[] | null, string | null] {
  if (typeof selector !== "object" || selector === null) throw new ValidationError("selector", "must be { ids }, { kind } or { all: true }");
  if ("ids" in selector) {
    if (!Array.isArray(selector.ids) || selector.ids.length === 0) throw new ValidationError("ids", "must be a non-empty array of job ids");
    return [selector.ids.map((id, i) => checkId(id, `ids[${i}]`)), null];
  }
  if ("kind" in selector) {
    return [null, checkText(selector.kind, "kind", { maxLength: maxKindLength })];
  }
  if ("all" in selector && selector.all === true) return [null, null];
  throw new ValidationError("selector", "must be { ids }, { kind } or { all: true }");
}
