import type { Batch, BatchMember } from "../../batches.js";
import { type Html, html } from "../html.js";
import { type PageContext, count, href, page, statusBadge, time } from "../layout.js";
import type { JobStatus } from "../../job.js";

/** A batch's state as a badge-like word: open (members unfinished) or finished (callback enqueued). */
function state(batch: Batch): Html {
  return batch.status === "open" ? html`<span class="status status-running">open</span>` : html`<span class="status status-done">finished</span>`;
}

/** The batches page: newest first, open or finished, a page at a time. */
export function batchesPage(ctx: PageContext, status: "open" | "finished" | null, batches: readonly Batch[], older: string | null): Html {
  const option = (value: string, label: string) => html`<option value="${value}"${(status ?? "") === value ? html` selected` : ""}>${label}</option>`;
  const form = html`<form class="filters" method="get" action="${href(ctx, "/batches")}">
<div><label for="f-status">Status</label><select id="f-status" name="status">${option("", "Any")}${option("open", "Open")}${option("finished", "Finished")}</select></div>
<div><button type="submit">Show</button></div>
</form>`;
  const rows = batches.map((b) => html`<tr data-batch-id="${b.id}">
<td><a href="${href(ctx, `/batches/${b.id}`)}">${b.id}</a></td><td>${state(b)}</td><td class="num">${b.total}</td><td class="num">${b.done}</td><td class="num">${b.dead}</td><td class="num">${b.cancelled}</td><td class="num">${b.remaining}</td>
<td>${b.callback.kind}${b.callbackJobId === null ? "" : html` (<a href="${href(ctx, `/jobs/${b.callbackJobId}`)}">job ${b.callbackJobId}</a>)`}</td><td>${time(b.createdAt)}</td></tr>`);
  const content = batches.length === 0
    ? html`<p role="status">No ${status ?? ""} batches${older === null ? "" : " on this page"}. Batches are enqueued in code with <code>errand.batch({ jobs, then })</code>.</p>`
    : html`<div class="table-wrap"><table id="batches">
<caption>${count(batches.length)} ${status ?? ""} batches, newest first</caption>
<thead><tr><th scope="col">Id</th><th scope="col">State</th><th scope="col" class="num">Members</th><th scope="col" class="num">Done</th><th scope="col" class="num">Dead</th><th scope="col" class="num">Cancelled</th><th scope="col" class="num">Unfinished</th><th scope="col">Callback</th><th scope="col">Created</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>
${older === null ? "" : html`<nav class="pager" aria-label="Pages"><a href="${href(ctx, "/batches", { status, before: older })}" rel="next">Older →</a></nav>`}`;
  return page(ctx, { title: "Batches", section: "batches", body: html`<h1>Batches</h1>${form}${content}` });
}

/** One batch: counts, failed members, callback, and its members a page at a time. */
export function batchPage(ctx: PageContext, batch: Batch, members: readonly BatchMember[], next: string | null): Html {
  const job = (id: string) => html`<a href="${href(ctx, `/jobs/${id}`)}">${id}</a>`;
  const body = html`<h1>Batch ${batch.id} <small class="muted">then ${batch.callback.kind}</small></h1>
<p>${state(batch)} ${batch.total - batch.remaining} of ${batch.total} members finished</p>
<h2>Facts</h2>
<dl class="facts" id="facts">
<dt>Members</dt><dd>${batch.total}</dd>
<dt>Done</dt><dd>${batch.done}</dd>
<dt>Dead</dt><dd>${batch.dead}</dd>
<dt>Cancelled</dt><dd>${batch.cancelled}</dd>
<dt>Unfinished</dt><dd>${batch.remaining}</dd>
<dt>Failed members</dt><dd>${batch.failedIds.length === 0 ? html`<span class="muted">none</span>` : batch.failedIds.map((id, i) => html`${i ? ", " : ""}${job(id)}`)}</dd>
<dt>Callback</dt><dd>${batch.callback.kind}${batch.callbackJobId === null ? html` <span class="muted">(enqueued when every member has finished)</span>` : html`: job ${job(batch.callbackJobId)}`}</dd>
<dt>Created</dt><dd>${time(batch.createdAt)}</dd>
<dt>Finished</dt><dd>${time(batch.finishedAt)}</dd>
</dl>
<h2 id="callback-heading">Callback payload</h2>
<pre id="callback-payload" aria-labelledby="callback-heading">${JSON.stringify(batch.callback.payload, null, 2)}</pre>
<h2>Members</h2>
${members.length === 0
    ? html`<p class="muted">No members on this page (purged members are not listed).</p>`
    : html`<div class="table-wrap"><table id="members">
<caption>Members by id</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Finished</th><th scope="col">Last error</th></tr></thead>
<tbody>${members.map((m) => html`<tr data-job-id="${m.id}"><td>${job(m.id)}</td><td>${m.kind}</td><td>${statusBadge(m.status as JobStatus)}</td><td class="num">${m.attempts}/${m.maxAttempts}</td><td>${time(m.finishedAt)}</td><td class="error">${m.error}</td></tr>`)}</tbody>
</table></div>
${next === null ? "" : html`<nav class="pager" aria-label="Pages"><a href="${href(ctx, `/batches/${batch.id}`, { after: next })}" rel="next">More members →</a></nav>`}`}`;
  return page(ctx, { title: `Batch ${batch.id}`, section: "batches", body });
}
