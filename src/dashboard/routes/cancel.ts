import type { Context, Hono } from "hono";
import { ErrandError, ValidationError } from "../../errors.js";
import { checkId } from "../../validate.js";
import type { DashboardDeps, DashboardEnv } from "../context.js";
import { href } from "../layout.js";
import { cancelConfirmPage, cancelRefusedPage } from "../pages/cancel.js";

/** How many ids the notice after a cancel lists (the rest are counted). */
const idsShown = 50;
/** Most ids one form may name. */
const maxIds = 1000;

/**
 * `POST /jobs/cancel`: cancels the chosen ready, scheduled or running jobs (`errand.cancel`,
 * all or nothing), after a confirmation page (the form comes back with `confirm=yes`),
 * then redirects to the job's page (one job, from its page) or to the cancelled jobs.
 * The CSRF, origin and read-only checks ran in the dashboard's middleware. A job that
 * finished meanwhile, or an unknown id, changes nothing and answers 409 saying why.
 */
export function registerCancel(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  app.post("/jobs/cancel", (c) => cancel(c, deps));
}

async function cancel(c: Context<DashboardEnv>, deps: DashboardDeps): Promise<Response> {
  const ctx = c.get("page");
  const body = await c.req.parseBody({ all: true });
  const ids = readIds(body.id);
  const returnTo = body.return === "job" && ids.length === 1 ? "job" : null;
  if (body.confirm !== "yes") return deps.send(c, cancelConfirmPage(ctx, ids, returnTo));
  let cancelled: string[];
  try {
    cancelled = await deps.errand.cancel({ ids });
  } catch (error) {
    if (error instanceof ErrandError && (error.code === "job_finished" || error.code === "not_found")) {
      return deps.send(c, cancelRefusedPage(ctx, error.message, ids), 409);
    }
    throw error;
  }
  if (returnTo === "job") return c.redirect(href(ctx, `/jobs/${cancelled[0]}`, { done: "cancel" }), 303);
  return c.redirect(href(ctx, "/jobs", { status: "cancelled", done: "cancel", n: cancelled.length, ids: cancelled.slice(0, idsShown).join(",") }), 303);
}

function readIds(raw: unknown): string[] {
  const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((id): id is string => typeof id === "string" && id !== "");
  if (ids.length === 0) throw new ValidationError("id", "select at least one job to cancel");
  if (ids.length > maxIds) throw new ValidationError("id", `at most ${maxIds} jobs at once; use errand.cancel({ kind }) or \`errand cancel --kind\` for more`);
  return [...new Set(ids.map((id) => checkId(id, "id")))];
}
