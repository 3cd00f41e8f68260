import type { ScheduleInfo } from "../../schedules/info.js";
import { type Html, html } from "../html.js";
import { type PageContext, csrfField, href, notice, page, statusBadge, time } from "../layout.js";

/** What a schedule action did, for the notice after the redirect. */
export function scheduleNotice(action: string | undefined, name: string | undefined): Html | string {
  if (!name || (action !== "pause" && action !== "resume")) return "";
  return notice(action === "pause" ? `Paused schedule ${name}: it enqueues nothing until resumed.` : `Resumed schedule ${name}: it enqueues again from its next slot after now.`);
}

/** The schedules page: each schedule's next run, last slot, last success, policies; pause/resume. */
export function schedulesPage(ctx: PageContext, schedules: readonly ScheduleInfo[], message: Html | string): Html {
  const job = (id: string) => html`<a href="${href(ctx, `/jobs/${id}`)}">job ${id}</a>`;
  const action = (s: ScheduleInfo) => {
    const verb = s.paused ? "resume" : "pause";
    return html`<form method="post" action="${href(ctx, `/schedules/${verb}`)}">${csrfField(ctx)}<input type="hidden" name="name" value="${s.name}"><button type="submit"${s.paused ? "" : html` class="secondary"`}>${s.paused ? "Resume" : "Pause"}<span class="sr-only"> ${s.name}</span></button></form>`;
  };
  const rows = schedules.map((s) => html`<tr data-schedule="${s.name}">
<th scope="row">${s.name}</th><td>${s.kind}</td><td><code>${s.cron}</code><br><span class="muted">${s.timezone}</span></td>
<td>${s.paused ? html`<strong>Paused</strong>` : "Active"}</td>
<td>${time(s.nextRun)}</td><td>${time(s.lastSlot)}</td>
<td>${s.lastEnqueued ? html`${time(s.lastEnqueued.slot)}<br>${job(s.lastEnqueued.jobId)} ${s.lastEnqueued.status ? statusBadge(s.lastEnqueued.status) : html`<span class="muted">purged</span>`}` : html`<span class="muted">never</span>`}</td>
<td>${s.lastSuccess ? html`${time(s.lastSuccess.slot)}<br>${job(s.lastSuccess.jobId)}` : html`<span class="muted">never</span>`}</td>
<td>${s.lastSkipped ? html`${time(s.lastSkipped.slot)}<br><span class="muted">${s.lastSkipped.reason}</span>` : html`<span class="muted">—</span>`}</td>
<td>overlap: ${s.overlap}<br>missed: ${s.missed}${s.missed === "catch_up" ? ` (up to ${s.catchUpLimit})` : ""}</td>
${ctx.readOnly ? "" : html`<td>${action(s)}</td>`}</tr>`);
  const body = html`<h1>Schedules</h1>
${message}
${schedules.length === 0
    ? html`<p role="status">No schedules are declared. Declare them in code with <code>errand.schedules.declare([...])</code>.</p>`
    : html`<div class="table-wrap"><table id="schedules">
<caption>Recurring jobs: times are slots (the cron's planned times), shown in UTC</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Cron</th><th scope="col">State</th><th scope="col">Next run</th><th scope="col">Last slot</th><th scope="col">Last enqueued</th><th scope="col">Last success</th><th scope="col">Last skipped</th><th scope="col">Policies</th>${ctx.readOnly ? "" : html`<th scope="col">Action</th>`}</tr></thead>
<tbody>${rows}</tbody>
</table></div>`}`;
  return page(ctx, { title: "Schedules", section: "schedules", body });
}
