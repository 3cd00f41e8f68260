import type { QueueStats } from "../../observe/stats.js";
import { type Html, html } from "../html.js";
import { count } from "../layout.js";

/**
 * The overview's JetStream queues (those the dashboard's errand knows), absent when there
 * are none: per queue its jobs in the outbox, pending in the stream, awaiting their ack and
 * redelivered; a queue whose figures could not be read says why instead.
 */
export function jetstreamSection(stats: QueueStats): Html | string {
  if (!stats.jetstream) return "";
  const rows = stats.jetstream.map((q) =>
    "error" in q
      ? html`<tr data-jetstream="${q.queue}"><th scope="row">${q.queue}</th><td colspan="4"><strong>unreachable:</strong> ${q.error}</td></tr>`
      : html`<tr data-jetstream="${q.queue}"><th scope="row">${q.queue}</th>
<td class="num">${count(q.outbox)}</td><td class="num">${count(q.pending)}</td><td class="num">${count(q.ackPending)}</td><td class="num">${count(q.redelivered)}</td></tr>`,
  );
  return html`<h2>JetStream queues</h2>
<div class="table-wrap"><table id="jetstream">
<caption>Queues whose jobs run on NATS JetStream: committed but not yet relayed (outbox), in the stream waiting for a worker (pending), delivered and not yet acknowledged (ack pending: running, or waiting out their ack wait), delivered more than once. Their dead jobs are on the Dead page.</caption>
<thead><tr><th scope="col">Queue</th><th scope="col" class="num">Outbox</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Ack pending</th><th scope="col" class="num">Redelivered</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`;
}
