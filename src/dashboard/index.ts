export { createDashboard, type DashboardOptions } from "./app.js";
export { type DashboardAuth, authFromEnv } from "./security.js";
