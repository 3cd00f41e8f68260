import type { Context } from "hono";
import type { Errand } from "../client.js";
import type { DashboardData } from "./data.js";
import type { Html } from "./html.js";
import type { PageContext } from "./layout.js";
import type { DashboardAuth } from "./security.js";

// What the app hands every route module. Routes import these types from here, not from
// app.ts, so app.ts can import the routes without a cycle.

/** How the dashboard behaves. */
export interface DashboardOptions {
  /** Path the dashboard is served under, e.g. `"/errand"`. Default: the root. */
  readonly basePath?: string;
  /** Hide every action (retry, discard, pause, resume) and refuse every POST. Default false. */
  readonly readOnly?: boolean;
  /** Require a token or basic auth on every request. Default: none (bind to loopback!). */
  readonly auth?: DashboardAuth;
  /** Seconds between the overview's refreshes in the browser. Default 5. */
  readonly refreshSeconds?: number;
  /** Rows per page in job lists. Default 50. */
  readonly pageSize?: number;
  /**
   * Origins besides the request's own host whose forms may POST, for a reverse proxy that
   * rewrites `Host` (the browser's `Origin` is then the public address, e.g.
   * `["https://ops.example.com"]`). Default: none.
   */
  readonly trustedOrigins?: readonly string[];
}

/** Per-request values the routes share. */
export interface DashboardEnv {
  Variables: { page: PageContext };
}

/** What the route modules receive. */
export interface DashboardDeps {
  readonly errand: Errand;
  readonly data: DashboardData;
  readonly options: Required<Omit<DashboardOptions, "auth" | "trustedOrigins">>;
  /** Sends a page with the right status. */
  send(c: Context<DashboardEnv>, body: Html, status?: 200 | 400 | 403 | 404 | 409 | 500): Response;
}
