import type { JobStatus } from "../../job.js";
import type { JobSummary, Page } from "../data.js";
import { type Html, html } from "../html.js";
import { type PageContext, count, csrfField, href, page, statusBadge, time } from "../layout.js";

/** The statuses a filter may name. */
export const statuses: readonly JobStatus[] = ["ready", "running", "done", "dead", "cancelled"];

/** The jobs page's filter, as read from the query string. */
export interface JobsFilter {
  readonly kind: string | null;
  readonly status: JobStatus | null;
  readonly q: string | null;
}

/** A table of jobs (shared with the dead-letter page, which adds checkboxes). */
export function jobTable(ctx: PageContext, caption: string, jobs: readonly JobSummary[], options: { select?: boolean; died?: boolean } = {}): Html {
  return html`<div class="table-wrap"><table class="jobs">
<caption>${caption}</caption>
<thead><tr>${options.select ? html`<th scope="col"><label><input type="checkbox" data-select-all><span class="sr-only">Select all on this page</span></label></th>` : ""}<th scope="col">Id</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">${options.died ? "Died" : "Run at"}</th><th scope="col">Created</th><th scope="col">Last error</th></tr></thead>
<tbody>${jobs.map((job) => html`<tr data-job-id="${job.id}">
${options.select ? html`<td><input type="checkbox" name="id" value="${job.id}" id="select-${job.id}" aria-label="Select job ${job.id}"></td>` : ""}
<td><a href="${href(ctx, `/jobs/${job.id}`)}">${job.id}</a></td><td>${job.kind}</td><td>${statusBadge(job.status)}</td>
<td class="num">${job.attempts}/${job.maxAttempts}</td><td>${time(options.died ? job.finishedAt : job.runAt)}</td><td>${time(job.createdAt)}</td><td class="error">${job.error}</td></tr>`)}</tbody>
</table></div>`;
}

/** Links to the newer and older pages. */
export function pager(ctx: PageContext, path: string, query: Record<string, string | null>, result: Page<unknown>): Html {
  if (!result.newer && !result.older) return html``;
  return html`<nav class="pager" aria-label="Pages">
${result.newer ? html`<a href="${href(ctx, path, { ...query, after: result.newer })}" rel="prev">← Newer</a>` : ""}
${result.older ? html`<a href="${href(ctx, path, { ...query, before: result.older })}" rel="next">Older →</a>` : ""}
</nav>`;
}

/** The jobs page: filter by kind and status, search by id or dedupe key, keyset pages. */
export function jobsPage(ctx: PageContext, filter: JobsFilter, kinds: readonly string[], result: Page<JobSummary> | { search: JobSummary[] }, message: Html | string = ""): Html {
  const option = (value: string, label: string, selected: boolean) => html`<option value="${value}"${selected ? html` selected` : ""}>${label}</option>`;
  const form = html`<form class="filters" method="get" action="${href(ctx, "/jobs")}" role="search">
<div><label for="f-kind">Kind</label><select id="f-kind" name="kind">${option("", "Any kind", filter.kind === null)}${kinds.map((k) => option(k, k, filter.kind === k))}${filter.kind !== null && !kinds.includes(filter.kind) ? option(filter.kind, filter.kind, true) : ""}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status">${option("", "Any status", filter.status === null)}${statuses.map((s) => option(s, s, filter.status === s))}</select></div>
<div><label for="f-q">Id or dedupe key</label><input id="f-q" type="search" name="q" value="${filter.q ?? ""}" autocomplete="off"></div>
<div><button type="submit">Show</button> <a class="button secondary" href="${href(ctx, "/jobs")}">Clear</a></div>
</form>`;
  let content: Html;
  if ("search" in result) {
    content = result.search.length === 0
      ? html`<p role="status">No job has the id or dedupe key “${filter.q ?? ""}”.</p>`
      : jobTable(ctx, `Jobs whose id or dedupe key is “${filter.q ?? ""}”`, result.search);
  } else {
    const what = [filter.status ?? "all", filter.kind ? `${filter.kind} ` : "", "jobs"].join(" ").replace(/\s+/g, " ");
    // Ready and running jobs can be cancelled from their list: every row there is cancellable.
    const cancellable = !ctx.readOnly && (filter.status === "ready" || filter.status === "running");
    const table = jobTable(ctx, `${count(result.items.length)} ${what}, newest first`, result.items, { select: cancellable });
    content = result.items.length === 0
      ? html`<p role="status">No ${what} on this page.</p>`
      : html`${cancellable
        ? html`<form method="post" action="${href(ctx, "/jobs/cancel")}" id="job-list">${csrfField(ctx)}
${table}
<div class="actions"><button type="submit" class="danger">Cancel selected</button></div>
</form>`
        : table}${pager(ctx, "/jobs", { kind: filter.kind, status: filter.status }, result)}`;
  }
  return page(ctx, { title: "Jobs", section: "jobs", body: html`<h1>Jobs</h1>${message}${form}${content}` });
}
