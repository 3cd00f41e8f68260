import type { Hono } from "hono";
import { ValidationError } from "../../errors.js";
import type { JobStatus } from "../../job.js";
import { checkId, isJobId, textProblem } from "../../validate.js";
import type { DashboardDeps, DashboardEnv } from "../context.js";
import { messagePage, notice } from "../layout.js";
import { cancelNotice } from "../pages/cancel.js";
import { actionNotice, deadPage } from "../pages/dead.js";
import { jobPage } from "../pages/job.js";
import { jobsPage, statuses } from "../pages/jobs.js";
import { overviewPage } from "../pages/overview.js";

/** A job id from the query string, or null; anything else is a 400 naming the field. */
export function idParam(value: string | undefined, field: string): string | null {
  if (value === undefined || value === "") return null;
  return checkId(value, field);
}

/** A free-text filter, or null; bounded in length, and refused when PostgreSQL could not compare it (a `\u0000`). */
export function textParam(value: string | undefined, field: string, max = 300): string | null {
  if (value === undefined || value === "") return null;
  if (value.length > max) throw new ValidationError(field, `must be at most ${max} characters`);
  const problem = textProblem(value);
  if (problem) throw new ValidationError(field, problem);
  return value;
}

function statusParam(value: string | undefined): JobStatus | null {
  if (value === undefined || value === "") return null;
  if (!(statuses as readonly string[]).includes(value)) throw new ValidationError("status", `must be one of ${statuses.join(", ")}, got ${JSON.stringify(value)}`);
  return value as JobStatus;
}

/** The GET pages: overview, jobs, job detail, dead letters. */
export function registerPages(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  const { data, options } = deps;

  app.get("/", async (c) => {
    const [stats, series] = await Promise.all([deps.errand.stats(), data.series(60)]);
    const done = { action: c.req.query("done"), queue: c.req.query("queue"), kind: c.req.query("kind") };
    return deps.send(c, overviewPage(c.get("page"), { stats, series }, options.refreshSeconds, done));
  });

  app.get("/jobs", async (c) => {
    const q = textParam(c.req.query("q")?.trim(), "q", 500);
    const filter = { kind: textParam(c.req.query("kind"), "kind", 200), status: statusParam(c.req.query("status")), q };
    const before = idParam(c.req.query("before"), "before");
    const after = idParam(c.req.query("after"), "after");
    const [kinds, result] = await Promise.all([
      data.kinds(),
      q !== null ? data.search(q).then((search) => ({ search })) : data.jobs({ kind: filter.kind, status: filter.status, before, after, limit: options.pageSize }),
    ]);
    return deps.send(c, jobsPage(c.get("page"), filter, kinds, result, cancelDoneNotice(c.req.query())));
  });

  app.get("/jobs/:id", async (c) => {
    const ctx = c.get("page");
    const id = idParam(c.req.param("id"), "id");
    const found = id === null ? null : await data.job(id);
    if (!found) return deps.send(c, messagePage(ctx, "Not found", `There is no job ${c.req.param("id")}: it never existed, or it was discarded or purged.`), 404);
    const done = c.req.query("done");
    const message = done === "retry" ? notice(`Retried job ${found.job.id}: it is ready to run again.`) : done === "cancel" ? cancelNotice(1, [found.job.id]) : "";
    return deps.send(c, jobPage(ctx, found.job, found.now, message));
  });

  app.get("/dead", async (c) => {
    const kind = textParam(c.req.query("kind"), "kind", 200);
    // Cut rather than refused when long: the groups' error summaries are cut at 300 too.
    const error = textParam(c.req.query("error")?.slice(0, 300), "error");
    const after = idParam(c.req.query("after"), "after");
    const [groups, list] = await Promise.all([data.deadGroups(), data.dead({ kind, error, after, limit: options.pageSize })]);
    return deps.send(c, deadPage(c.get("page"), groups, { kind, error }, list, doneNotice(c.req.query())));
  });
}

/** The notice after a cancel's redirect to the jobs list: `?done=cancel&n=3&ids=1,2,3`. */
function cancelDoneNotice(query: Record<string, string>) {
  if (query.done !== "cancel") return "";
  const n = Number(query.n);
  if (!Number.isInteger(n) || n < 1) return "";
  return cancelNotice(n, (query.ids ?? "").split(",").filter(isJobId));
}

/** The notice after a POST/redirect: `?done=retry&n=3&ids=1,2,3[&kind=k]`. */
function doneNotice(query: Record<string, string>) {
  const action = query.done;
  if (action !== "retry" && action !== "discard") return "";
  const n = Number(query.n);
  if (!Number.isInteger(n) || n < 0) return "";
  const ids = (query.ids ?? "").split(",").filter(isJobId);
  return actionNotice(action, n, ids, query.kind || null);
}
