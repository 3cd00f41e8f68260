import type { MinuteCount } from "./data.js";
import { type Html, html } from "./html.js";

/**
 * Completions and failed attempts per minute as an inline SVG bar chart (stacked:
 * failures on top of completions), with a text summary for screen readers and the
 * numbers in a table behind a disclosure.
 */
export function throughputChart(series: readonly MinuteCount[]): Html {
  const width = 720, height = 200, left = 40, bottom = 24, top = 10;
  const plotW = width - left - 8, plotH = height - top - bottom;
  const max = Math.max(1, ...series.map((m) => m.done + m.failed));
  const scale = niceCeiling(max);
  const slot = plotW / Math.max(1, series.length);
  const barW = Math.max(1, slot * 0.8);
  const y = (n: number) => (n / scale) * plotH;
  const totalDone = series.reduce((sum, m) => sum + m.done, 0);
  const totalFailed = series.reduce((sum, m) => sum + m.failed, 0);
  const bars = series.map((m, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const hDone = y(m.done), hFailed = y(m.failed);
    const label = `${m.minutesAgo === 0 ? "this minute" : `${m.minutesAgo} min ago`}: ${m.done} done, ${m.failed} failed`;
    return html`<g><title>${label}</title>${m.done ? html`<rect class="bar-done" x="${x.toFixed(1)}" y="${(top + plotH - hDone).toFixed(1)}" width="${barW.toFixed(1)}" height="${hDone.toFixed(1)}"/>` : ""}${m.failed ? html`<rect class="bar-failed" x="${x.toFixed(1)}" y="${(top + plotH - hDone - hFailed).toFixed(1)}" width="${barW.toFixed(1)}" height="${hFailed.toFixed(1)}"/>` : ""}</g>`;
  });
  const minutes = series.length;
  return html`<figure class="chart">
<figcaption id="chart-title">Throughput and failures per minute, last ${minutes} minutes</figcaption>
<svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title chart-desc" focusable="false">
<desc id="chart-desc">${totalDone} jobs completed and ${totalFailed} attempts failed in the last ${minutes} minutes; the busiest minute had ${max} events.</desc>
<line class="axis" x1="${left}" y1="${top + plotH}" x2="${width - 8}" y2="${top + plotH}"/>
<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}"/>
<text class="axis-label" x="${left - 6}" y="${top + 10}" text-anchor="end">${scale}</text>
<text class="axis-label" x="${left - 6}" y="${top + plotH}" text-anchor="end">0</text>
<text class="axis-label" x="${left}" y="${height - 6}">${minutes} min ago</text>
<text class="axis-label" x="${width - 8}" y="${height - 6}" text-anchor="end">now</text>
${bars}
</svg>
<div class="legend" aria-hidden="true"><span><span class="swatch done"></span>completed</span><span><span class="swatch failed"></span>failed attempts</span></div>
<details><summary>Show the numbers</summary>
<div class="table-wrap"><table><caption>Per minute</caption>
<thead><tr><th scope="col">Minute</th><th scope="col" class="num">Completed</th><th scope="col" class="num">Failed</th></tr></thead>
<tbody>${series.filter((m) => m.done || m.failed).map((m) => html`<tr><td>${m.minutesAgo === 0 ? "this minute" : `${m.minutesAgo} min ago`}</td><td class="num">${m.done}</td><td class="num">${m.failed}</td></tr>`)}</tbody>
</table></div>
</details>
</figure>`;
}

/** 1, 2, 5 × 10^n at or above `n`: a round top for the y axis. */
function niceCeiling(n: number): number {
  const power = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * power >= n) return step * power;
  return 10 * power;
}
