import type { DeadGroup, JobSummary, Page } from "../data.js";
import { type Html, html } from "../html.js";
import { type PageContext, count, csrfField, href, notice, page, time } from "../layout.js";
import { jobTable } from "./jobs.js";

/** A dead-letter action. */
export type DeadAction = "retry" | "discard";

/** What an action applies to: chosen ids, or every dead job of a kind. */
export type DeadTarget = { readonly ids: readonly string[] } | { readonly kind: string };

const verbs = { retry: ["Retry", "retried"], discard: ["Discard", "discarded"] } as const;

/** The "what changed" line after an action, from the redirect's query string. */
export function actionNotice(action: DeadAction, n: number, ids: readonly string[], kind: string | null): Html {
  const shown = ids.join(", ");
  const more = n > ids.length ? ` and ${count(n - ids.length)} more` : "";
  const what = `${count(n)} dead job${n === 1 ? "" : "s"}${kind ? ` of kind ${kind}` : ""}`;
  const after = action === "retry" ? " They are ready to run again." : " They are deleted.";
  return notice(n === 0 ? `Nothing changed: no dead jobs matched.` : `${verbs[action][1][0]!.toUpperCase()}${verbs[action][1].slice(1)} ${what}: ${shown}${more}.${after}`);
}

/** The dead-letter page: groups by kind and error, per-kind actions, a selectable list. */
export function deadPage(
  ctx: PageContext,
  groups: readonly DeadGroup[],
  filter: { kind: string | null; error: string | null },
  list: Page<JobSummary>,
  message: Html | string,
): Html {
  const byKind = new Map<string, number>();
  for (const g of groups) byKind.set(g.kind, (byKind.get(g.kind) ?? 0) + g.count);
  const kindForm = (action: DeadAction, kind: string, n: number) => html`<form method="post" action="${href(ctx, `/dead/${action}`)}" class="inline">${csrfField(ctx)}<input type="hidden" name="kind" value="${kind}"><button type="submit"${action === "discard" ? html` class="danger"` : ""}>${verbs[action][0]} all ${count(n)}<span class="sr-only"> dead ${kind} jobs</span></button></form>`;
  const groupsTable = groups.length === 0
    ? html`<p role="status">No dead jobs. Nothing to look at.</p>`
    : html`<div class="table-wrap"><table id="groups">
<caption>Dead jobs grouped by kind and the first line of their last error, largest group first</caption>
<thead><tr><th scope="col">Kind</th><th scope="col">Error</th><th scope="col" class="num">Jobs</th><th scope="col">Last died</th><th scope="col">Show</th></tr></thead>
<tbody>${groups.map((g) => html`<tr><td>${g.kind}</td><td class="error">${g.error || html`<span class="muted">(no error text)</span>`}</td><td class="num">${count(g.count)}</td><td>${time(g.lastDied)}</td>
<td><a href="${href(ctx, "/dead", { kind: g.kind, error: g.error })}">Show<span class="sr-only"> ${g.kind} jobs failing with this error</span></a></td></tr>`)}</tbody>
</table></div>`;
  const kindsTable = byKind.size === 0 ? "" : html`<h2>By kind</h2><div class="table-wrap"><table id="dead-kinds">
<caption>Dead jobs per kind${ctx.readOnly ? "" : ", with actions on all of them"}</caption>
<thead><tr><th scope="col">Kind</th><th scope="col" class="num">Dead</th>${ctx.readOnly ? "" : html`<th scope="col">Actions</th>`}</tr></thead>
<tbody>${[...byKind].map(([kind, n]) => html`<tr data-kind="${kind}"><th scope="row"><a href="${href(ctx, "/dead", { kind })}">${kind}</a></th><td class="num">${count(n)}</td>${ctx.readOnly ? "" : html`<td><div class="actions">${kindForm("retry", kind, n)}${kindForm("discard", kind, n)}</div></td>`}</tr>`)}</tbody>
</table></div>`;
  const scope = [filter.kind ? `kind ${filter.kind}` : "", filter.error !== null ? `error “${filter.error}”` : ""].filter(Boolean).join(", ");
  const table = jobTable(ctx, `Dead jobs${scope ? ` (${scope})` : ""}, oldest first`, list.items, { select: !ctx.readOnly, died: true });
  const listSection = list.items.length === 0 ? html`<p class="muted">No dead jobs${scope ? ` for ${scope}` : ""}.</p>` : ctx.readOnly ? table : html`<form method="post" action="${href(ctx, "/dead/retry")}" id="dead-list">${csrfField(ctx)}
${table}
<div class="actions"><button type="submit">Retry selected</button><button type="submit" class="danger" formaction="${href(ctx, "/dead/discard")}">Discard selected</button></div>
</form>`;
  const body = html`<h1>Dead letters</h1>
${message}
<p class="muted">Jobs that used up their attempts or failed permanently. Each one is work that did not happen until someone retries or discards it.</p>
<h2>Errors</h2>
${groupsTable}
${kindsTable}
<h2 id="list">Jobs${scope ? html` <small class="muted">(${scope}) <a href="${href(ctx, "/dead")}">show all</a></small>` : ""}</h2>
${listSection}
${list.older ? html`<nav class="pager" aria-label="Pages"><a rel="next" href="${href(ctx, "/dead", { kind: filter.kind, error: filter.error, after: list.older })}">More →</a></nav>` : ""}`;
  return page(ctx, { title: "Dead letters", section: "dead", body });
}

/** The confirmation step every action goes through (it works without JavaScript). */
export function confirmPage(ctx: PageContext, action: DeadAction, target: DeadTarget, n: number, returnTo: string | null): Html {
  const [verb] = verbs[action];
  const what = "ids" in target
    ? `${verb} ${target.ids.length === 1 ? `dead job ${target.ids[0]}` : `${count(target.ids.length)} dead jobs: ${target.ids.join(", ")}`}?`
    : `${verb} all ${count(n)} dead jobs of kind ${target.kind}?`;
  const one = "ids" in target ? target.ids.length === 1 : n === 1;
  const effect = action === "retry"
    ? `${one ? "It goes" : "They go"} back to ready with attempts reset; the error history is kept.`
    : `${one ? "It is" : "They are"} deleted for good; this cannot be undone.`;
  const fields = "ids" in target ? target.ids.map((id) => html`<input type="hidden" name="id" value="${id}">`) : html`<input type="hidden" name="kind" value="${target.kind}">`;
  const body = html`<h1>Confirm: ${verb.toLowerCase()}</h1>
<p id="confirm-question">${what}</p>
<p>${effect}</p>
<form method="post" action="${href(ctx, `/dead/${action}`)}" class="actions">${csrfField(ctx)}${fields}
<input type="hidden" name="confirm" value="yes">${returnTo ? html`<input type="hidden" name="return" value="${returnTo}">` : ""}
<button type="submit"${action === "discard" ? html` class="danger"` : ""}>Yes, ${verb.toLowerCase()}</button>
<a class="button secondary" href="${href(ctx, "/dead")}">Cancel</a>
</form>`;
  return page(ctx, { title: `Confirm ${verb.toLowerCase()}`, section: "dead", body });
}
