import type { Errand } from "../client.js";
import { NotFoundError } from "../errors.js";
import type { QueueStats } from "../observe/stats.js";
import { closest } from "../validate.js";

/** Names listed in the error before it says "…". */
const listed = 10;

/**
 * Checks a `--kind` filter that matched nothing: a kind no job in the table and no
 * schedule has is almost always a typo, so it is an error (exit 1, like an unknown schedule
 * name) with the nearest known kind, not an empty answer. A known kind that simply has
 * nothing to show passes. `stats` saves a query when the caller already read them.
 */
export async function checkKindFilter(errand: Errand, kind: string, stats?: QueueStats): Promise<void> {
  const [figures, schedules] = await Promise.all([stats ?? errand.stats(), errand.schedules.list()]);
  const known = [...new Set([...Object.keys(figures.kinds), ...schedules.map((s) => s.kind)])].sort();
  if (known.includes(kind)) return;
  const hint = closest(kind, known);
  const names = known.length > listed ? `${known.slice(0, listed).join(", ")}, …` : known.join(", ");
  throw new NotFoundError(`unknown kind '${kind}'${hint ? ` — did you mean '${hint}'?` : ""} (${known.length ? `known kinds: ${names}` : "no jobs or schedules yet"})`);
}
