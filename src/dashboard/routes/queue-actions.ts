import type { Hono } from "hono";
import { ValidationError } from "../../errors.js";
import type { PauseTarget } from "../../queues.js";
import type { DashboardDeps, DashboardEnv } from "../context.js";
import { href } from "../layout.js";

/**
 * Pause and resume a queue or a kind from the overview (POST, with the CSRF, origin,
 * read-only and auth checks of the dashboard's middleware, like the dead-letter actions).
 * A pause is undone by a resume, so these act at once, without a confirmation step.
 */
export function registerQueueActions(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  for (const action of ["pause", "resume"] as const) {
    app.post(`/queues/${action}`, async (c) => {
      const body = await c.req.parseBody();
      const target = readTarget(body);
      await deps.errand[action](target);
      const [scope, name] = "queue" in target ? ["queue", target.queue] : ["kind", target.kind];
      return c.redirect(href(c.get("page"), "/", { done: action, [scope]: name }), 303);
    });
  }
}

function readTarget(body: Record<string, unknown>): PauseTarget {
  const queue = typeof body.queue === "string" && body.queue !== "" ? body.queue : null;
  const kind = typeof body.kind === "string" && body.kind !== "" ? body.kind : null;
  if ((queue === null) === (kind === null)) throw new ValidationError("queue", "name a queue or a kind (exactly one)");
  // errand.pause checks the name itself (the error names the field).
  return queue !== null ? { queue } : { kind: kind! };
}
