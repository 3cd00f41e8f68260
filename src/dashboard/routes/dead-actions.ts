import type { Context, Hono } from "hono";
import { ValidationError } from "../../errors.js";
import { maxKindLength } from "../../enqueue.js";
import { checkId, checkText } from "../../validate.js";
import type { DashboardDeps, DashboardEnv } from "../context.js";
import { href } from "../layout.js";
import { type DeadAction, type DeadTarget, confirmPage } from "../pages/dead.js";

/** How many ids the notice after an action lists (the rest are counted). */
const idsShown = 50;
/** Most ids one form may name. */
const maxIds = 1000;

/**
 * The POST actions on dead letters. Each goes through a confirmation page first (the
 * form comes back with `confirm=yes`), then redirects to a page that says what changed.
 * The CSRF, origin and read-only checks ran in the dashboard's middleware.
 */
export function registerActions(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  for (const action of ["retry", "discard"] as const) {
    app.post(`/dead/${action}`, (c) => act(c, deps, action));
  }
}

async function act(c: Context<DashboardEnv>, deps: DashboardDeps, action: DeadAction): Promise<Response> {
  const ctx = c.get("page");
  const body = await c.req.parseBody({ all: true });
  const target = readTarget(body);
  const returnTo = body.return === "job" && "ids" in target && target.ids.length === 1 ? "job" : null;
  if (body.confirm !== "yes") {
    const n = "ids" in target ? target.ids.length : (await deps.data.deadGroups(10_000)).filter((g) => g.kind === target.kind).reduce((sum, g) => sum + g.count, 0);
    return deps.send(c, confirmPage(ctx, action, target, n, returnTo));
  }
  const changed = await deps.errand.dead[action]("ids" in target ? { ids: target.ids } : { kind: target.kind });
  if (returnTo === "job" && action === "retry") return c.redirect(href(ctx, `/jobs/${changed[0]}`, { done: "retry" }), 303);
  return c.redirect(href(ctx, "/dead", {
    done: action,
    n: changed.length,
    ids: changed.slice(0, idsShown).join(","),
    kind: "kind" in target ? target.kind : null,
  }), 303);
}

function readTarget(body: Record<string, unknown>): DeadTarget {
  const raw = body.id;
  const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((id): id is string => typeof id === "string" && id !== "");
  const kind = typeof body.kind === "string" && body.kind !== "" ? body.kind : null;
  if (ids.length > 0 && kind !== null) throw new ValidationError("id", "give job ids or a kind, not both");
  if (ids.length === 0 && kind === null) throw new ValidationError("id", "select at least one dead job (or choose a kind)");
  if (ids.length > maxIds) throw new ValidationError("id", `at most ${maxIds} jobs at once; use "all of a kind" for more`);
  if (kind !== null) return { kind: checkText(kind, "kind", { maxLength: maxKindLength }) };
  return { ids: [...new Set(ids.map((id) => checkId(id, "id")))] };
}
