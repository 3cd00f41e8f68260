import type { Errand } from "../client.js";
import { type Job, type JobRow, type JobStatus, toDate, toJob } from "../job.js";
import { type DashboardQueries, dashboardQueriesFor } from "../sql/dashboard.js";
import { isJobId } from "../validate.js";

/** One row of a job list. */
export interface JobSummary {
  readonly id: string;
  readonly kind: string;
  readonly status: JobStatus;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly runAt: Date;
  readonly createdAt: Date;
  readonly finishedAt: Date | null;
  readonly lockedBy: string | null;
  readonly dedupeKey: string | null;
  /** First line of the last error ("" when none). */
  readonly error: string;
}

/** One page of a keyset-paginated list. */
export interface Page<T> {
  readonly items: readonly T[];
  /** Id to pass as `before` for the next (older) page, when there is one. */
  readonly older: string | null;
  /** Id to pass as `after` for the previous (newer) page, when there is one. */
  readonly newer: string | null;
}

/** Dead letters sharing a kind and the first line of their error. */
export interface DeadGroup {
  readonly kind: string;
  readonly error: string;
  readonly count: number;
  readonly firstId: string;
  readonly lastDied: Date | null;
}

/** Per-minute completions and failed attempts, oldest minute first. */
export interface MinuteCount {
  readonly minutesAgo: number;
  readonly done: number;
  readonly failed: number;
}

interface SummaryRow {
  id: string | number; kind: string; status: JobStatus; attempts: number; max_attempts: number;
  run_at: Date | string; created_at: Date | string; finished_at: Date | string | null;
  locked_by: string | null; dedupe_key: string | null; error: string;
}

function toSummary(row: SummaryRow): JobSummary {
  return {
    id: String(row.id), kind: row.kind, status: row.status, attempts: Number(row.attempts), maxAttempts: Number(row.max_attempts),
    runAt: toDate(row.run_at), createdAt: toDate(row.created_at), finishedAt: row.finished_at === null ? null : toDate(row.finished_at),
    lockedBy: row.locked_by, dedupeKey: row.dedupe_key, error: row.error,
  };
}

/** The largest bigint: "before" for the first page. */
const maxId = "9223372036854775807";

/** The dashboard's reads, over errand's driver. */
export class DashboardData {
  readonly #errand: Errand;
  readonly #q: DashboardQueries;

  constructor(errand: Errand) {
    this.#errand = errand;
    this.#q = dashboardQueriesFor(errand.schema);
  }

  async #rows<Row>(name: keyof DashboardQueries, params: readonly unknown[]): Promise<Row[]> {
    return (await this.#errand.driver.run<Row>(this.#q[name], params)).rows;
  }

  /** A page of jobs, newest first. Give `before` (older page) or `after` (newer page). */
  async jobs(filter: { kind: string | null; status: JobStatus | null; before: string | null; after: string | null; limit: number }): Promise<Page<JobSummary>> {
    const newerFirst = filter.after !== null;
    const rows = await this.#rows<SummaryRow>(newerFirst ? "listJobsNewer" : "listJobsOlder", [
      filter.kind, filter.status, newerFirst ? filter.after : (filter.before ?? maxId), filter.limit + 1,
    ]);
    const more = rows.length > filter.limit;
    const items = rows.slice(0, filter.limit).map(toSummary);
    if (newerFirst) items.reverse();
    const first = items[0]?.id ?? null;
    const last = items.at(-1)?.id ?? null;
    return {
      items,
      older: newerFirst ? last : more ? last : null,
      newer: newerFirst ? (more ? first : null) : filter.before !== null ? first : null,
    };
  }

  /** Jobs whose id or dedupe key is `term`. */
  async search(term: string): Promise<JobSummary[]> {
    const id = isJobId(term) ? term : null;
    return (await this.#rows<SummaryRow>("findJobs", [id, term])).map(toSummary);
  }

  /** Kinds for the filter: recent ones and every dead one. */
  async kinds(): Promise<string[]> {
    return (await this.#rows<{ kind: string }>("recentKinds", [])).map((row) => row.kind);
  }

  /** One job and the database's current time, or null. */
  async job(id: string): Promise<{ job: Job; now: Date } | null> {
    const [row] = await this.#rows<JobRow & { db_now: Date | string }>("jobDetail", [id]);
    return row ? { job: toJob(row), now: toDate(row.db_now) } : null;
  }

  /** Dead letters grouped by kind and error. */
  async deadGroups(limit = 100): Promise<DeadGroup[]> {
    const rows = await this.#rows<{ kind: string; error: string; count: number; first_id: string | number; last_died: Date | string | null }>("deadGroups", [limit]);
    return rows.map((r) => ({ kind: r.kind, error: r.error, count: Number(r.count), firstId: String(r.first_id), lastDied: r.last_died === null ? null : toDate(r.last_died) }));
  }

  /** A page of dead jobs, oldest first, optionally of one kind and one error group. */
  async dead(filter: { kind: string | null; error: string | null; after: string | null; limit: number }): Promise<Page<JobSummary>> {
    const rows = await this.#rows<SummaryRow>("listDead", [filter.kind, filter.error, filter.after ?? "0", filter.limit + 1]);
    const items = rows.slice(0, filter.limit).map(toSummary);
    return { items, older: rows.length > filter.limit ? (items.at(-1)?.id ?? null) : null, newer: null };
  }

  /** Completions and failed attempts per minute over the last `minutes`, oldest first. */
  async series(minutes: number): Promise<MinuteCount[]> {
    const rows = await this.#rows<{ minutes_ago: number; done: number; failed: number }>("overviewSeries", [minutes]);
    return rows.map((r) => ({ minutesAgo: Number(r.minutes_ago), done: Number(r.done), failed: Number(r.failed) }));
  }
}
