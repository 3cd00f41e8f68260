import { type Job, isInfinite } from "../../job.js";
import { type Html, html } from "../html.js";
import { type PageContext, csrfField, duration, href, page, statusBadge, time } from "../layout.js";

/** Seconds from one time to another; none when either is missing or infinite. */
const seconds = (from: Date | null, to: Date | null) => (from && to && !isInfinite(from) && !isInfinite(to) ? (to.getTime() - from.getTime()) / 1000 : null);

/** One job: facts, timings, lease, payload, last progress and result (pretty JSON, as text) and every attempt's error. */
export function jobPage(ctx: PageContext, job: Job, now: Date, notice: Html | string = ""): Html {
  const leaseLeft = job.status === "running" ? seconds(now, job.lockedUntil) : null;
  const cancellable = (job.status === "ready" || job.status === "running") && !ctx.readOnly;
  const actions = cancellable
    ? html`<div class="actions">
<form method="post" action="${href(ctx, "/jobs/cancel")}" class="inline">${csrfField(ctx)}<input type="hidden" name="id" value="${job.id}"><input type="hidden" name="return" value="job"><button type="submit" class="danger">Cancel job ${job.id}</button></form>
</div>`
    : job.status === "dead" && !ctx.readOnly
    ? html`<div class="actions">
<form method="post" action="${href(ctx, "/dead/retry")}" class="inline">${csrfField(ctx)}<input type="hidden" name="id" value="${job.id}"><input type="hidden" name="return" value="job"><button type="submit">Retry job ${job.id}</button></form>
<form method="post" action="${href(ctx, "/dead/discard")}" class="inline">${csrfField(ctx)}<input type="hidden" name="id" value="${job.id}"><input type="hidden" name="return" value="job"><button type="submit" class="danger">Discard job ${job.id}</button></form>
</div>`
    : "";
  const body = html`<h1>Job ${job.id} <small class="muted">${job.kind}</small></h1>
${notice}
<p>${statusBadge(job.status)} attempt ${job.attempts} of ${job.maxAttempts}</p>
${actions}
<h2>Facts</h2>
<dl class="facts" id="facts">
<dt>Kind</dt><dd>${job.kind}</dd>
<dt>Status</dt><dd>${job.status}</dd>
<dt>Attempts</dt><dd>${job.attempts} of ${job.maxAttempts}</dd>
<dt>Priority</dt><dd>${job.priority}</dd>
${job.batchId === null ? "" : html`<dt>Batch</dt><dd><a href="${href(ctx, `/batches/${job.batchId}`)}">batch ${job.batchId}</a></dd>`}
<dt>Dedupe key</dt><dd>${job.dedupeKey ?? html`<span class="muted">none</span>`}</dd>
<dt>Created</dt><dd>${time(job.createdAt)}</dd>
<dt>Run at</dt><dd>${time(job.runAt)}${job.status === "ready" && !isInfinite(job.runAt) ? html` <span class="muted">(${job.runAt > now ? `in ${duration(seconds(now, job.runAt))}` : `due ${duration(seconds(job.runAt, now))} ago`})</span>` : ""}</dd>
<dt>Last started</dt><dd>${time(job.startedAt)}</dd>
<dt>Finished</dt><dd>${time(job.finishedAt)}</dd>
<dt>Waited</dt><dd>${duration(seconds(job.createdAt, job.startedAt))} <span class="muted">(created → last start)</span></dd>
<dt>Ran</dt><dd>${duration(seconds(job.startedAt, job.finishedAt))} <span class="muted">(last start → finish)</span></dd>
<dt>Lease holder</dt><dd>${job.lockedBy ?? html`<span class="muted">none</span>`}</dd>
<dt>Lease until</dt><dd>${time(job.lockedUntil)}${leaseLeft !== null ? html` <span class="muted">(${leaseLeft >= 0 ? `${duration(leaseLeft)} left` : `expired ${duration(-leaseLeft)} ago`})</span>` : ""}</dd>
</dl>
<h2 id="payload-heading">Payload</h2>
<pre id="payload" aria-labelledby="payload-heading">${JSON.stringify(job.payload, null, 2)}</pre>
${job.progress === null ? "" : html`<h2 id="progress-heading">Progress</h2>
<pre id="progress" aria-labelledby="progress-heading">${JSON.stringify(job.progress, null, 2)}</pre>`}
${job.result === null ? "" : html`<h2 id="result-heading">Result</h2>
<pre id="result" aria-labelledby="result-heading">${JSON.stringify(job.result, null, 2)}</pre>`}
<h2>Attempts</h2>
${job.errors.length === 0
    ? html`<p class="muted">No failed attempts recorded.</p>`
    : html`<div class="table-wrap"><table id="attempts">
<caption>Failed attempts, from the job's error history (the last 25 kept)</caption>
<thead><tr><th scope="col" class="num">Attempt</th><th scope="col">At</th><th scope="col">Error</th></tr></thead>
<tbody>${job.errors.map((e) => html`<tr><td class="num">${e.attempt}</td><td>${time(new Date(e.at))}</td><td class="error"><pre>${e.error}</pre></td></tr>`)}</tbody>
</table></div>`}
${job.lastError && job.lastError !== job.errors.at(-1)?.error ? html`<h2>Last error</h2><pre id="last-error">${job.lastError}</pre>` : ""}
<p><a href="${href(ctx, "/jobs", { kind: job.kind })}">More ${job.kind} jobs</a></p>`;
  return page(ctx, { title: `Job ${job.id}`, section: "jobs", body });
}
