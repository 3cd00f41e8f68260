import { type Command, InvalidArgumentError } from "commander";
import type { Notifier } from "../observe/alerts.js";
import { parseDuration } from "../human-format.js";
import { startMetricsServer } from "../observe/metrics-server.js";
import { telegramNotifier, webhookNotifier } from "../observe/notifiers.js";
import { defaultMetricsHost, defaultSchema } from "../defaults.js";
import { type DatabaseFlags, databaseLabel, intArg, logLine, openFromFlags, withDatabase } from "./common.js";

interface MetricsFlags extends DatabaseFlags {
  readonly port: number;
  readonly host: string;
  readonly alertWebhook?: string;
  readonly alertTelegramChat?: string;
  readonly alertInterval?: string;
  readonly oldestReady?: string;
  readonly failureRate?: number;
  readonly deadAlert?: boolean;
}

/** `errand metrics --port N`: Prometheus /metrics for the queue, and optional alerts. */
export function register(program: Command): void {
  withDatabase(
    program
      .command("metrics")
      .description("serve Prometheus /metrics with the queue's figures; with --alert-* also send alerts (once per incident, and when resolved)")
      .requiredOption("--port <n>", "port for GET /metrics", intArg(0, 65_535))
      .option("--host <address>", "address to bind; 0.0.0.0 for a scraper on another host (/metrics has no authentication)", defaultMetricsHost)
      .option("--alert-webhook <url>", "POST each alert as JSON to this URL")
      .option("--alert-telegram-chat <id>", "send each alert to this Telegram chat (bot token from $TELEGRAM_BOT_TOKEN)")
      .option("--alert-interval <duration>", "time between alert checks (default 30s)")
      .option("--oldest-ready <duration>", "alert when a kind's oldest due job waited longer (default 15m)")
      .option("--failure-rate <fraction>", "alert when a kind's failure rate over the last hour exceeds this (default 0.25)", fraction)
      .option("--no-dead-alert", "do not alert on dead jobs"),
  ).action(async (flags: MetricsFlags) => {
    const notifiers = buildNotifiers(flags);
    logLine({ level: "info", event: "starting", database: databaseLabel(flags), schema: flags.schema ?? defaultSchema });
    const errand = await openFromFlags(flags);
    const server = await startMetricsServer({ port: flags.port, host: flags.host, stats: () => errand.stats() });
    logLine({ level: "info", event: "metrics_listening", host: flags.host, port: server.port, path: "/metrics" });
    const alerter = notifiers.length
      ? errand.alerter({
          notifiers: [...notifiers, { notify: async (alert) => logLine({ level: alert.status === "firing" ? "warn" : "info", event: `alert_${alert.status}`, key: alert.key, message: alert.message }) }],
          intervalMs: flags.alertInterval === undefined ? 30_000 : parseDuration(flags.alertInterval, "--alert-interval"),
          rules: {
            deadJobs: flags.deadAlert !== false,
            ...(flags.oldestReady === undefined ? {} : { oldestReadyMs: parseDuration(flags.oldestReady, "--oldest-ready") }),
            ...(flags.failureRate === undefined ? {} : { failureRate: { threshold: flags.failureRate } }),
          },
          onError: (error) => logLine({ level: "error", event: "alert_error", error: error instanceof Error ? error.message : String(error) }),
        })
      : undefined;
    void alerter?.start();
    const shutdown = () => {
      void (async () => {
        await alerter?.stop();
        await server.close();
        await errand.close();
        process.exit(0);
      })();
    };
    process.once("SIGTERM", shutdown);
    process.once("SIGINT", shutdown);
  });
}

function buildNotifiers(flags: MetricsFlags): Notifier[] {
  const notifiers: Notifier[] = [];
  if (flags.alertWebhook !== undefined) notifiers.push(webhookNotifier({ url: flags.alertWebhook }));
  if (flags.alertTelegramChat !== undefined) {
    const token = process.env.TELEGRAM_BOT_TOKEN;
    if (!token) throw new InvalidArgumentError("--alert-telegram-chat needs the bot token in $TELEGRAM_BOT_TOKEN");
    notifiers.push(telegramNotifier({ token, chatId: flags.alertTelegramChat }));
  }
  return notifiers;
}

function fraction(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !(n >= 0 && n < 1)) throw new InvalidArgumentError("must be a fraction from 0 to below 1, e.g. 0.25");
  return n;
}
