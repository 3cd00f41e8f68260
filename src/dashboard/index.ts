export { createDashboard, type DashboardOptions } from "./dashboard.js";
export { type DashboardAuth, authFromEnv } from "./security.js";
