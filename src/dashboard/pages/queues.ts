import type { QueueStats } from "../../observe/stats.js";
import { type Html, html } from "../html.js";
import { type PageContext, count, csrfField, href, notice } from "../layout.js";

/** What a pause or resume did, from the redirect's query. */
export interface PauseDone {
  readonly action?: string | undefined;
  readonly queue?: string | undefined;
  readonly kind?: string | undefined;
}

/** The notice after a pause or resume. */
export function pausedNotice(done: PauseDone): Html | string {
  const name = done.queue !== undefined ? `queue ${done.queue}` : done.kind !== undefined ? `kind ${done.kind}` : undefined;
  if (name === undefined || (done.action !== "pause" && done.action !== "resume")) return "";
  return notice(
    done.action === "pause"
      ? `Paused ${name}: within a second no worker starts another of its jobs; running ones finish.`
      : `Resumed ${name}: workers take its jobs again.`,
  );
}

/**
 * The overview's queues: depth, running vs limit and state per queue with a pause or resume button (none
 * on a read-only dashboard), and the paused kinds with a resume button.
 */
export function queuesSection(ctx: PageContext, stats: QueueStats): Html {
  const button = (scope: "queue" | "kind", name: string, paused: boolean) => {
    if (ctx.readOnly) return "";
    const verb = paused ? "resume" : "pause";
    return html`<form method="post" action="${href(ctx, `/queues/${verb}`)}">${csrfField(ctx)}<input type="hidden" name="${scope}" value="${name}"><button type="submit"${paused ? "" : html` class="secondary"`}>${paused ? "Resume" : "Pause"}<span class="sr-only"> ${scope} ${name}</span></button></form>`;
  };
  const queues = Object.entries(stats.queues);
  const rows = queues.map(([name, q]) => html`<tr data-queue="${name}"><th scope="row">${name}</th>
<td class="num">${count(q.ready)}</td><td class="num">${count(q.scheduled)}</td><td class="num">${count(q.running)}</td><td class="num">${q.limit === null ? "—" : count(q.limit)}</td>
<td>${q.paused ? html`<strong>Paused</strong>` : "Active"}</td>${ctx.readOnly ? "" : html`<td>${button("queue", name, q.paused)}</td>`}</tr>`);
  const kinds = stats.pausedKinds.map((kind) => html`<li data-paused-kind="${kind}">${kind} ${button("kind", kind, true)}</li>`);
  return html`<h2>Queues</h2>
${queues.length === 0
    ? html`<p class="muted">No ready or running jobs in any queue.</p>`
    : html`<div class="table-wrap"><table id="queues">
<caption>Jobs per queue, and its global concurrency limit (errand limits set --queue). A paused queue's jobs wait, ready, until it is resumed; running ones finish.</caption>
<thead><tr><th scope="col">Queue</th><th scope="col" class="num">Ready</th><th scope="col" class="num">Scheduled</th><th scope="col" class="num">Running</th><th scope="col" class="num">Limit</th><th scope="col">State</th>${ctx.readOnly ? "" : html`<th scope="col">Action</th>`}</tr></thead>
<tbody>${rows}</tbody>
</table></div>`}
${kinds.length === 0 ? "" : html`<h3>Paused kinds</h3><ul id="paused-kinds">${kinds}</ul>`}
${ctx.readOnly ? "" : html`<form method="post" action="${href(ctx, "/queues/pause")}" class="actions">${csrfField(ctx)}<label>Pause a kind <input name="kind" required maxlength="200"></label> <button type="submit" class="secondary">Pause kind</button></form>`}`;
}
