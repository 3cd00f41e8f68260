import { ErrandError, ValidationError } from "../errors.js";
import type { Notifier } from "./alerts.js";

/** Options of {@link webhookNotifier}. */
export interface WebhookOptions {
  /** Receives `POST` with the {@link Alert} as JSON. */
  readonly url: string;
  /** Extra headers, e.g. an authorization token. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Give up on a request after this long. Default 10 s. */
  readonly timeoutMs?: number;
}

/**
 * Posts each alert as JSON: `{ status, rule, kind, key, message, openedAt, at }`.
 * A non-2xx answer is an error (the alerter tries again at its next check).
 */
export function webhookNotifier(options: WebhookOptions): Notifier {
  checkUrl(options.url, "url");
  return {
    async notify(alert) {
      await post(options.url, alert, options.headers ?? {}, options.timeoutMs ?? 10_000);
    },
  };
}

/** Options of {@link telegramNotifier}. */
export interface TelegramOptions {
  /** The bot's token from @BotFather (keep it out of command lines: read it from the environment). */
  readonly token: string;
  /** The chat, group or channel id to post to. */
  readonly chatId: string | number;
  /** The Bot API's address. Default `https://api.telegram.org`. */
  readonly apiUrl?: string;
  readonly timeoutMs?: number;
}

/**
 * Sends each alert as a Telegram message through the Bot API's `sendMessage`.
 */
export function telegramNotifier(options: TelegramOptions): Notifier {
  if (typeof options.token !== "string" || !/^\d+:[\w-]+$/.test(options.token)) throw new ValidationError("token", "must be a Telegram bot token (digits:letters)");
  if (options.chatId === undefined || options.chatId === "") throw new ValidationError("chatId", "is required");
  const api = options.apiUrl ?? "https://api.telegram.org";
  checkUrl(api, "apiUrl");
  return {
    async notify(alert) {
      const icon = alert.status === "firing" ? "🔴" : "✅";
      const text = `${icon} errand ${alert.status}: ${alert.message}`;
      const answer = await post(`${api.replace(/\/$/, "")}/bot${options.token}/sendMessage`, { chat_id: options.chatId, text, disable_web_page_preview: true }, {}, options.timeoutMs ?? 10_000);
      if (!(answer as { ok?: boolean } | null)?.ok) throw new ErrandError("notify_failed", `telegram: sendMessage was not ok: ${JSON.stringify(answer)}`);
    },
  };
}

async function post(url: string, body: unknown, headers: Readonly<Record<string, string>>, timeoutMs: number): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new ErrandError("notify_failed", `POST ${redact(url)} failed: ${(error as Error).message}`, { cause: error });
  }
  const text = await response.text();
  if (!response.ok) throw new ErrandError("notify_failed", `POST ${redact(url)} answered ${response.status}: ${text.slice(0, 200)}`);
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

/** Never print a bot token. */
function redact(url: string): string {
  return url.replace(/\/bot[^/]+\//, "/bot***/");
}

function checkUrl(url: unknown, field: string): void {
  if (typeof url !== "string" || !/^https?:\/\/\S+$/.test(url)) throw new ValidationError(field, `must be an http(s) URL (got ${JSON.stringify(url)})`);
}
