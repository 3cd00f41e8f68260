import { type JobStatus, isInfinite } from "../job.js";
import { type Child, Html, html } from "./html.js";

/** What every page knows about the request it answers. */
export interface PageContext {
  /** Path prefix the dashboard is mounted at, without a trailing slash ("" at the root). */
  readonly base: string;
  /** The CSRF token for forms on this page. */
  readonly csrf: string;
  /** Actions hidden and refused. */
  readonly readOnly: boolean;
  /** Whether the schedules page exists. */
  readonly schedules: boolean;
}

/** The dashboard's sections, for the navigation. */
export type Section = "overview" | "jobs" | "dead" | "batches" | "schedules";

/** Builds a link inside the dashboard, with query parameters (empty ones dropped). */
export function href(ctx: PageContext, path: string, query: Record<string, string | number | null | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
  const text = params.toString();
  return `${ctx.base}${path}${text ? `?${text}` : ""}`;
}

/** The page shell: skip link, heading, navigation, main landmark. */
export function page(ctx: PageContext, options: { title: string; section: Section | null; body: Child; refreshSeconds?: number }): Html {
  const link = (section: Section, path: string, label: string) =>
    html`<li><a href="${href(ctx, path)}"${options.section === section ? html` aria-current="page"` : ""}>${label}</a></li>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${options.title} · errand</title>
<link rel="stylesheet" href="${href(ctx, "/assets/dashboard.css")}">
<script src="${href(ctx, "/assets/dashboard.js")}" defer></script>
</head>
<body>
<a class="skip" href="#content">Skip to content</a>
<header class="top">
  <a class="brand" href="${href(ctx, "/")}">errand</a>
  <nav aria-label="Dashboard">
    <ul>
      ${link("overview", "/", "Overview")}
      ${link("jobs", "/jobs", "Jobs")}
      ${link("dead", "/dead", "Dead letters")}
      ${link("batches", "/batches", "Batches")}
      ${ctx.schedules ? link("schedules", "/schedules", "Schedules") : ""}
    </ul>
  </nav>
  ${ctx.readOnly ? html`<span class="mode">Read-only</span>` : ""}
</header>
<main id="content" tabindex="-1"${options.refreshSeconds ? html` data-refresh="${options.refreshSeconds}"` : ""}>
${options.body}
</main>
</body>
</html>`;
}

/** A hidden CSRF field for a form. */
export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

/** A status badge. */
export function statusBadge(status: JobStatus): Html {
  return html`<span class="status status-${status}">${status}</span>`;
}

/** A UTC timestamp in a `<time>` element; PostgreSQL's ±infinity as words. */
export function time(value: Date | null | undefined): Html {
  if (!value || Number.isNaN(value.getTime())) return html`<span class="muted">—</span>`;
  if (isInfinite(value)) return html`<span class="infinite">${value.getTime() < 0 ? "-infinity" : "infinity"}</span>`;
  const iso = value.toISOString();
  return html`<time datetime="${iso}">${iso.replace("T", " ").replace(/\.\d+Z$/, " UTC")}</time>`;
}

/** A duration in seconds, for people: "850 ms", "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h". */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, seconds);
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** A whole number with thousands separators. */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A notice box: `role="status"` so screen readers announce what an action changed. */
export function notice(text: Child, kind: "ok" | "error" = "ok"): Html {
  return html`<div class="notice${kind === "error" ? " error" : ""}" role="${kind === "error" ? "alert" : "status"}">${text}</div>`;
}

/** A plain message page (not found, refused, bad request). */
export function messagePage(ctx: PageContext, title: string, message: Child): Html {
  return page(ctx, { title, section: null, body: html`<h1>${title}</h1>${notice(message, "error")}<p><a href="${href(ctx, "/")}">Back to the overview</a></p>` });
}

export { Html };
