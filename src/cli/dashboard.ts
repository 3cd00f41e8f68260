import { isIP } from "node:net";
import { type Command, InvalidArgumentError } from "commander";
import { defaultDashboardHost, defaultDashboardPort, defaultSchema } from "../defaults.js";
import { authFromEnv, checkTrustedOrigins } from "../dashboard/security.js";
import { type DatabaseFlags, databaseLabel, intArg, openFromFlags, withDatabase } from "./common.js";
import { type JetStreamFlags, jetstreamQueueOptions, jetstreamQueues, withJetStream } from "./jetstream-flags.js";

interface DashboardFlags extends DatabaseFlags, JetStreamFlags {
  readonly port: number;
  readonly host: string;
  readonly readOnly?: boolean;
  readonly basePath?: string;
  readonly trustedOrigin?: string[];
}

/** True for names and addresses that only this machine can reach. */
function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare === "localhost" || bare === "::1") return true;
  return isIP(bare) === 4 && bare.startsWith("127.");
}

/** Adds `errand dashboard` to the program. */
export function register(program: Command): void {
  withDatabase(
    withJetStream(
      program
        .command("dashboard")
        .description("serve the web dashboard (overview, jobs, dead letters, schedules) until SIGINT or SIGTERM")
        .option("--port <n>", "port to listen on (0 = any free port)", intArg(0, 65_535), defaultDashboardPort)
        .option("--host <host>", "address to bind; anything but loopback needs ERRAND_DASHBOARD_TOKEN or ERRAND_DASHBOARD_USER/PASSWORD", defaultDashboardHost)
        .option("--read-only", "hide and refuse every action (retry, discard, pause, resume)")
        .option("--base-path <path>", "serve under this path, e.g. /errand")
        .option("--trusted-origin <origin>", "also accept actions posted from this origin, e.g. https://ops.example.com behind a proxy that rewrites Host (repeatable)", (value: string, previous: string[] = []) => [...previous, value]),
      "also show",
    ),
  ).action(async (flags: DashboardFlags) => {
    const auth = authFromEnv();
    if (!isLoopback(flags.host) && !auth) {
      throw new InvalidArgumentError(
        `refusing to serve the dashboard on ${flags.host} without authentication: set ERRAND_DASHBOARD_TOKEN (16+ characters) or ERRAND_DASHBOARD_USER and ERRAND_DASHBOARD_PASSWORD, or bind to 127.0.0.1`,
      );
    }
    // Loaded here, not at the top: every other command starts without the web server's modules.
    const [{ serve }, { createDashboard, resolveDashboardOptions }] = await Promise.all([import("@hono/node-server"), import("../dashboard/app.js")]);
    const options = { readOnly: flags.readOnly === true, trustedOrigins: flags.trustedOrigin ?? [], ...(auth ? { auth } : {}), ...(flags.basePath ? { basePath: flags.basePath } : {}) };
    // Bad flags fail here, before connecting.
    checkTrustedOrigins(options.trustedOrigins, "--trusted-origin");
    resolveDashboardOptions(options);
    const jetstream = jetstreamQueueOptions(flags);
    console.log(`errand dashboard: database ${databaseLabel(flags)}, schema ${flags.schema ?? defaultSchema}`);
    const errand = await openFromFlags(flags);
    jetstreamQueues(errand, jetstream);
    const app = createDashboard(errand, options);
    const server = serve({ fetch: app.fetch, port: flags.port, hostname: flags.host }, (info) => {
      const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
      console.log(`errand dashboard on http://${host}:${info.port}${flags.basePath ?? "/"}${flags.readOnly ? " (read-only)" : ""}${auth ? " (authentication required)" : ""}`);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error: Error) => reject(new InvalidArgumentError(`cannot listen on ${flags.host}:${flags.port}: ${error.message}`)));
      const stop = () => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    }).finally(() => errand.close());
  });
}
