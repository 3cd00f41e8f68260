import type { QueueStats } from "../../observe/stats.js";
import { type Html, html } from "../html.js";
import { count, notice } from "../layout.js";

/**
 * The overview's concurrency-key limits (`errand.limits.set`), absent when there are none:
 * per limit, running vs its concurrency, ready, and how many due jobs its rate holds back now.
 */
export function limitsSection(stats: QueueStats): Html | string {
  if (stats.limits.length === 0) return "";
  const rows = stats.limits.map(
    (l) => html`<tr data-limit="${l.key}"><th scope="row">${l.key}</th>
<td class="num">${count(l.running)}</td><td class="num">${l.concurrency === null ? "—" : count(l.concurrency)}</td>
<td>${l.rate === null ? "—" : `${count(l.rate.count)} per ${count(l.rate.periodMs)} ms`}</td>
<td class="num">${count(l.ready)}</td><td class="num">${l.rateHeld > 0 ? html`<strong>${count(l.rateHeld)}</strong>` : "0"}</td></tr>`,
  );
  return html`<h2>Limits</h2>
<div class="table-wrap"><table id="limits">
<caption>Concurrency-key limits, shared by every worker. A prefix (tenant:*) applies to each of its keys on its own; its figures add up its keys.</caption>
<thead><tr><th scope="col">Key</th><th scope="col" class="num">Running</th><th scope="col" class="num">Concurrency</th><th scope="col">Rate</th><th scope="col" class="num">Ready</th><th scope="col" class="num">Held by rate</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`;
}

/** A warning naming the kinds whose ready jobs no live worker serves; nothing when every job has a worker. */
export function unservedWarning(stats: QueueStats): Html | string {
  if (stats.unserved.length === 0) return "";
  const items = stats.unserved.map((u) => html`<li data-unserved="${u.queue}/${u.kind}">${u.kind} in queue ${u.queue}: ${count(u.ready)} ready</li>`);
  return notice(
    html`<strong>No live worker serves these jobs.</strong> No worker seen within a minute has their queue and a handler for their kind: a mistyped kind, or a queue no worker was given. They wait until one does.<ul id="unserved">${items}</ul>`,
    "error",
  );
}
