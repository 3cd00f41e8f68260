export { createDashboard } from "./app.js";
export type { DashboardOptions } from "./context.js";
export { type DashboardAuth, authFromEnv } from "./security.js";
