import type { Hono } from "hono";
import { ValidationError } from "../../errors.js";
import type { DashboardDeps, DashboardEnv } from "../context.js";
import { messagePage } from "../layout.js";
import { batchPage, batchesPage } from "../pages/batches.js";
import { idParam } from "./pages.js";

/** The batches list and one batch's page (read only: a batch is acted on through its members). */
export function registerBatches(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  const { errand, options } = deps;

  app.get("/batches", async (c) => {
    const raw = c.req.query("status") ?? "";
    if (raw !== "" && raw !== "open" && raw !== "finished") throw new ValidationError("status", `must be open or finished, got ${JSON.stringify(raw)}`);
    const status = raw === "" ? null : raw;
    const before = idParam(c.req.query("before"), "before");
    const list = await errand.listBatches({ limit: options.pageSize + 1, ...(status ? { status } : {}), ...(before ? { beforeId: before } : {}) });
    const shown = list.slice(0, options.pageSize);
    return deps.send(c, batchesPage(c.get("page"), status, shown, list.length > shown.length ? shown.at(-1)!.id : null));
  });

  app.get("/batches/:id", async (c) => {
    const ctx = c.get("page");
    const id = idParam(c.req.param("id"), "id");
    const batch = id === null ? null : await errand.getBatch(id);
    if (!batch) return deps.send(c, messagePage(ctx, "Not found", `There is no batch ${c.req.param("id")}.`), 404);
    const after = idParam(c.req.query("after"), "after");
    const members = await errand.batchMembers(batch.id, { limit: options.pageSize + 1, ...(after ? { afterId: after } : {}) });
    const shown = members.slice(0, options.pageSize);
    return deps.send(c, batchPage(ctx, batch, shown, members.length > shown.length ? shown.at(-1)!.id : null));
  });
}
