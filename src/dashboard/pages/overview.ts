import type { KindStats, QueueStats } from "../../observe/stats.js";
import { throughputChart } from "../chart.js";
import type { MinuteCount } from "../data.js";
import { type Html, html } from "../html.js";
import { type PageContext, count, duration, href, page } from "../layout.js";
import { jetstreamSection } from "./jetstream.js";
import { limitsSection, unservedWarning } from "./limits.js";
import { type PauseDone, pausedNotice, queuesSection } from "./queues.js";

/** Everything the overview shows. */
export interface OverviewNumbers {
  /** `errand.stats()`: counts per kind and outcomes over the last minute and hour. */
  readonly stats: QueueStats;
  /** Per-minute completions and failed attempts over the last hour, oldest first. */
  readonly series: readonly MinuteCount[];
}

const percent = (rate: number | null) => (rate === null ? "—" : `${(rate * 100).toFixed(1)}%`);
const age = (ms: number | null) => (ms === null ? "—" : duration(ms / 1000));

/** The overview page: totals, the chart, and a row per kind. Refreshes itself. */
export function overviewPage(ctx: PageContext, numbers: OverviewNumbers, refreshSeconds: number, done: PauseDone = {}): Html {
  const t = numbers.stats.total;
  const card = (metric: string, label: string, value: string, alert = false, link?: string) =>
    html`<div class="card${alert ? " alert" : ""}" data-metric="${metric}"><dt>${link ? html`<a href="${link}">${label}</a>` : label}</dt><dd>${value}</dd></div>`;
  const cell = (kind: string, status: string, n: number) =>
    n === 0 ? html`<span class="muted">0</span>` : html`<a href="${href(ctx, status === "dead" ? "/dead" : "/jobs", { kind, status: status === "dead" ? null : status })}">${count(n)}</a>`;
  const row = ([kind, k]: [string, KindStats]) => html`<tr data-kind="${kind}"><th scope="row"><a href="${href(ctx, "/jobs", { kind })}">${kind}</a></th>
<td class="num">${cell(kind, "ready", k.ready)}</td><td class="num">${count(k.scheduled)}</td><td class="num">${cell(kind, "running", k.running)}</td>
<td class="num">${cell(kind, "done", k.done)}</td><td class="num">${cell(kind, "dead", k.dead)}</td><td class="num">${cell(kind, "cancelled", k.cancelled)}</td><td class="num">${age(k.oldestReadyAgeMs)}</td>
<td class="num">${count(k.lastHour.completed)}</td><td class="num">${count(k.lastHour.failed)}</td><td class="num">${count(k.lastHour.timedOut)}</td><td class="num">${count(k.lastHour.cancelled)}</td><td class="num">${percent(k.lastHour.failureRate)}</td></tr>`;
  const kinds = Object.entries(numbers.stats.kinds);
  const body = html`<h1>Overview</h1>
${pausedNotice(done)}
<div id="refresh-slot" class="actions"></div>
<div id="live">
${unservedWarning(numbers.stats)}
<p class="muted">As of ${numbers.stats.at.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC")} (database time).</p>
<h2 id="totals">All kinds</h2>
<dl class="cards" aria-labelledby="totals">
  ${card("ready", "Ready", count(t.ready), false, href(ctx, "/jobs", { status: "ready" }))}
  ${card("scheduled", "Scheduled", count(t.scheduled))}
  ${card("running", "Running", count(t.running), t.expiredLeases > 0, href(ctx, "/jobs", { status: "running" }))}
  ${card("done", "Done (retained)", count(t.done), false, href(ctx, "/jobs", { status: "done" }))}
  ${card("dead", "Dead", count(t.dead), t.dead > 0, href(ctx, "/dead"))}
  ${card("cancelled", "Cancelled (retained)", count(t.cancelled), false, href(ctx, "/jobs", { status: "cancelled" }))}
  ${card("oldest-ready", "Oldest ready", age(t.oldestReadyAgeMs), (t.oldestReadyAgeMs ?? 0) > 3_600_000)}
  ${card("failure-rate", "Failure rate (last hour)", percent(t.lastHour.failureRate), (t.lastHour.failureRate ?? 0) > 0.1)}
  ${card("throughput", "Completed (last hour)", count(t.lastHour.completed))}
  ${card("failures", "Failed attempts (last hour)", count(t.lastHour.failed))}
  ${card("timed-out", "Timed out (last hour)", count(t.lastHour.timedOut), t.lastHour.timedOut > 0)}
  ${card("cancels", "Cancelled (last hour)", count(t.lastHour.cancelled))}
  ${t.expiredLeases > 0 ? card("expired", "Expired leases", count(t.expiredLeases), true) : ""}
</dl>
<h2>Last hour</h2>
${throughputChart(numbers.series)}
<h2>By kind</h2>
${kinds.length === 0
    ? html`<p class="muted">No jobs yet.</p>`
    : html`<div class="table-wrap"><table id="kinds">
<caption>Jobs per kind: ready are due now, scheduled wait for their run time; the last five columns cover the last hour (timed-out attempts are also counted as failed).</caption>
<thead><tr><th scope="col">Kind</th><th scope="col" class="num">Ready</th><th scope="col" class="num">Scheduled</th><th scope="col" class="num">Running</th><th scope="col" class="num">Done</th><th scope="col" class="num">Dead</th><th scope="col" class="num">Cancelled</th><th scope="col" class="num">Oldest ready</th><th scope="col" class="num">Completed</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Timed out</th><th scope="col" class="num">Cancels</th><th scope="col" class="num">Failure rate</th></tr></thead>
<tbody>${kinds.map(row)}</tbody>
</table></div>`}
${queuesSection(ctx, numbers.stats)}
${limitsSection(numbers.stats)}
${jetstreamSection(numbers.stats)}
</div>`;
  return page(ctx, { title: "Overview", section: "overview", body, refreshSeconds });
}
