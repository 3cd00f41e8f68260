import { type Html, html } from "../html.js";
import { type PageContext, count, csrfField, href, notice, page } from "../layout.js";

/** The confirmation step of a cancel (it works without JavaScript). `returnTo` "job": back to the job's page after. */
export function cancelConfirmPage(ctx: PageContext, ids: readonly string[], returnTo: "job" | null): Html {
  const one = ids.length === 1;
  const back = one ? href(ctx, `/jobs/${ids[0]}`) : href(ctx, "/jobs");
  const body = html`<h1>Confirm: cancel</h1>
<p id="confirm-question">${one ? `Cancel job ${ids[0]}?` : `Cancel ${count(ids.length)} jobs: ${ids.join(", ")}?`}</p>
<p>${one ? "It ends" : "They end"} <strong>cancelled</strong> for good: a ready or scheduled job never runs, and a running one's handler is told to stop (its signal aborts at its worker's next heartbeat, within about a second). ${one ? "It is" : "They are"} not retried; this cannot be undone. If ${one ? "it has" : "any has"} finished in the meantime, nothing changes.</p>
<form method="post" action="${href(ctx, "/jobs/cancel")}" class="actions">${csrfField(ctx)}${ids.map((id) => html`<input type="hidden" name="id" value="${id}">`)}
<input type="hidden" name="confirm" value="yes">${returnTo ? html`<input type="hidden" name="return" value="${returnTo}">` : ""}
<button type="submit" class="danger">Yes, cancel</button>
<a class="button secondary" href="${back}">No, keep ${one ? "it" : "them"}</a>
</form>`;
  return page(ctx, { title: "Confirm cancel", section: "jobs", body });
}

/** The "what changed" line after a cancel, from the redirect's query string. */
export function cancelNotice(n: number, ids: readonly string[]): Html {
  const more = n > ids.length ? ` and ${count(n - ids.length)} more` : "";
  return notice(`Cancelled ${count(n)} job${n === 1 ? "" : "s"}: ${ids.join(", ")}${more}. ${n === 1 ? "It" : "They"} will not run again; a running handler is told to stop.`);
}

/** The page when a cancel changed nothing because a job had finished already (or is unknown). */
export function cancelRefusedPage(ctx: PageContext, message: string, ids: readonly string[]): Html {
  const body = html`<h1>Nothing changed</h1>
${notice(message, "error")}
<p>Only ready, scheduled and running jobs can be cancelled; a done, dead or cancelled job has finished already.</p>
<p>${ids.length === 1 ? html`<a href="${href(ctx, `/jobs/${ids[0]}`)}">Back to job ${ids[0]}</a>` : html`<a href="${href(ctx, "/jobs")}">Back to the jobs</a>`}</p>`;
  return page(ctx, { title: "Nothing changed", section: "jobs", body });
}
