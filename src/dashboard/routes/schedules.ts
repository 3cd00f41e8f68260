import type { Hono } from "hono";
import { ValidationError } from "../../errors.js";
import type { DashboardDeps, DashboardEnv } from "../context.js";
import { href } from "../layout.js";
import { scheduleNotice, schedulesPage } from "../pages/schedules.js";

/**
 * The schedules page and its pause/resume actions (POST, CSRF-checked by the dashboard's
 * middleware). Pausing is undone by resuming, so these act at once, without a confirmation step.
 */
export function registerSchedules(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  // Only list, pause and resume are used: no scheduler is started from here.
  const schedules = deps.errand.schedules;

  app.get("/schedules", async (c) => {
    const list = await schedules.list();
    return deps.send(c, schedulesPage(c.get("page"), list, scheduleNotice(c.req.query("done"), c.req.query("name"))));
  });

  for (const action of ["pause", "resume"] as const) {
    app.post(`/schedules/${action}`, async (c) => {
      const body = await c.req.parseBody();
      if (typeof body.name !== "string" || body.name === "") throw new ValidationError("name", "must name a schedule");
      await schedules[action](body.name);
      return c.redirect(href(c.get("page"), "/schedules", { done: action, name: body.name }), 303);
    });
  }
}
