/**
 * `errand/dashboard`: the web dashboard as a Hono app, whose `fetch` is a standard
 * `(Request) => Response` handler. An entry of its own because it loads Hono, which
 * `errand` itself does not.
 *
 * @example
 * ```ts
 * import { createDashboard } from "errand/dashboard";
 *
 * const app = createDashboard(errand, { basePath: "/errand", readOnly: true });
 * ```
 *
 * @module
 */
export { createDashboard } from "./app.js";
export type { DashboardOptions } from "./context.js";
export { type DashboardAuth, authFromEnv } from "./security.js";
