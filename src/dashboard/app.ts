import { Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import type { Errand } from "../client.js";
import { defaultPageSize, defaultRefreshSeconds } from "../defaults.js";
import { ErrandError, ValidationError } from "../errors.js";
import { checkKeys, integerIn } from "../validate.js";
import { css, js } from "./assets.js";
import type { DashboardDeps, DashboardEnv, DashboardOptions } from "./context.js";
import { DashboardData } from "./data.js";
import { type PageContext, messagePage } from "./layout.js";
import { registerCancel } from "./routes/cancel.js";
import { registerActions } from "./routes/dead-actions.js";
import { registerBatches } from "./routes/batches.js";
import { registerPages } from "./routes/pages.js";
import { registerQueueActions } from "./routes/queue-actions.js";
import { registerSchedules } from "./routes/schedules.js";
import { CsrfTokens, authorized, checkAuth, checkTrustedOrigins, sameOrigin } from "./security.js";

const cookieName = "errand_csrf";

/**
 * The errand dashboard as a Hono app: overview, jobs, job detail, dead letters and schedules,
 * server-rendered with a little progressive enhancement. Serve it with
 * `@hono/node-server`, or mount `app.fetch` (a `(Request) => Response` handler) in any
 * server that speaks the Fetch API.
 *
 * @example
 * ```ts
 * import { serve } from "@hono/node-server";
 * const app = createDashboard(errand, { readOnly: true });
 * serve({ fetch: app.fetch, port: 4000, hostname: "127.0.0.1" });
 * ```
 */
export function createDashboard(errand: Errand, options: DashboardOptions = {}): Hono<DashboardEnv> {
  const { auth, trusted, ...resolved } = resolveDashboardOptions(options);
  const base = resolved.basePath;
  const csrf = new CsrfTokens();
  const app = new Hono<DashboardEnv>({ strict: false }).basePath(base || "/");
  const deps: DashboardDeps = {
    errand,
    data: new DashboardData(errand),
    options: resolved,
    send: (c, body, status = 200) => c.html(body.value, status),
  };

  const guard = createMiddleware<DashboardEnv>(async (c, next) => {
    c.header("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "same-origin");
    c.header("X-Frame-Options", "DENY");
    c.header("Cache-Control", "no-store");
    if (auth && !authorized(auth, c.req.header("authorization"))) {
      c.header("WWW-Authenticate", 'Basic realm="errand dashboard", charset="UTF-8"');
      return c.text("authentication required", 401);
    }
    let nonce = getCookie(c, cookieName);
    if (!nonce || !/^[A-Za-z0-9_-]{16,64}$/.test(nonce)) {
      nonce = csrf.nonce();
      setCookie(c, cookieName, nonce, { path: base || "/", httpOnly: true, sameSite: "Strict", secure: new URL(c.req.url).protocol === "https:" });
    }
    c.set("page", { base, csrf: csrf.token(nonce), readOnly: resolved.readOnly, schedules: true });
    if (c.req.method === "POST") {
      const ctx = c.get("page");
      if (resolved.readOnly) return deps.send(c, messagePage(ctx, "Read-only", "This dashboard is read-only: actions are turned off."), 403);
      const headers = { origin: c.req.header("origin"), referer: c.req.header("referer"), host: c.req.header("host") ?? new URL(c.req.url).host, fetchSite: c.req.header("sec-fetch-site") };
      if (!sameOrigin(headers, trusted)) return deps.send(c, messagePage(ctx, "Refused", "This request came from another site, so it was refused. Nothing was changed."), 403);
      const body = await c.req.parseBody({ all: true });
      if (!csrf.verify(getCookie(c, cookieName), body._csrf)) {
        return deps.send(c, messagePage(ctx, "Refused", "The form's security token is missing or out of date (the dashboard may have restarted). Reload the page and try again. Nothing was changed."), 403);
      }
    } else if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      return c.text("method not allowed", 405);
    }
    await next();
  });
  app.use("*", guard);

  app.get("/assets/dashboard.css", (c) => c.body(css, 200, { "Content-Type": "text/css; charset=utf-8", "Cache-Control": "max-age=300" }));
  app.get("/assets/dashboard.js", (c) => c.body(js, 200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "max-age=300" }));
  registerPages(app, deps);
  registerActions(app, deps);
  registerSchedules(app, deps);
  registerBatches(app, deps);
  registerQueueActions(app, deps);
  registerCancel(app, deps);

  app.notFound((c) => deps.send(c, messagePage(c.get("page") ?? fallbackPage(base, resolved.readOnly), "Not found", "There is no such page in the dashboard."), 404));
  app.onError((error, c) => {
    const ctx = c.get("page") ?? fallbackPage(base, resolved.readOnly);
    if (error instanceof ValidationError) return deps.send(c, messagePage(ctx, "Bad request", error.message), 400);
    if (error instanceof ErrandError && error.code === "not_found") return deps.send(c, messagePage(ctx, "Nothing changed", error.message), 409);
    console.error("errand dashboard:", error);
    return deps.send(c, messagePage(ctx, "Error", "Something went wrong on the server; the details are in its log."), 500);
  });
  return app;
}

function fallbackPage(base: string, readOnly: boolean): PageContext {
  return { base, csrf: "", readOnly, schedules: true };
}

/**
 * Checks the dashboard's options and fills in defaults, without a database: the CLI
 * calls it before connecting, so a bad flag fails at once.
 */
export function resolveDashboardOptions(options: DashboardOptions) {
  checkKeys(options, "", ["basePath", "readOnly", "auth", "refreshSeconds", "pageSize", "trustedOrigins"]);
  return {
    basePath: checkBase(options.basePath ?? ""),
    readOnly: options.readOnly === true,
    refreshSeconds: integerIn(options.refreshSeconds ?? defaultRefreshSeconds, "refreshSeconds", 1, 3600),
    pageSize: integerIn(options.pageSize ?? defaultPageSize, "pageSize", 1, 1000),
    auth: options.auth === undefined ? undefined : checkAuth(options.auth),
    trusted: checkTrustedOrigins(options.trustedOrigins ?? []),
  };
}

function checkBase(base: unknown): string {
  if (base === "" || base === "/") return "";
  // Segments of unreserved characters only, and none of them "." or "..".
  if (typeof base !== "string" || !/^(\/[A-Za-z0-9._~-]+)+$/.test(base) || base.split("/").some((segment) => /^\.+$/.test(segment))) {
    throw new ValidationError("basePath", `must look like "/errand" (no trailing slash), got ${JSON.stringify(base)}`);
  }
  return base;
}
