import type { Hono } from "hono";
import type { Errand } from "../../src/index.js";

/** A browser-like session against a dashboard app: keeps the CSRF cookie, reads tokens from pages. */
export function dashboardSession(app: Pick<Hono, "request">, base = "") {
  let cookie = "";
  const remember = (response: Response) => {
    const set = response.headers.get("set-cookie");
    if (set) cookie = set.split(";")[0]!;
  };
  return {
    async get(path: string, headers: Record<string, string> = {}) {
      const response = await app.request(`${base}${path}`, { headers: { ...(cookie ? { cookie } : {}), ...headers } });
      remember(response);
      return { status: response.status, headers: response.headers, text: await response.text() };
    },
    async post(path: string, fields: [string, string][], headers: Record<string, string> = {}) {
      const response = await app.request(`${base}${path}`, {
        method: "POST",
        body: new URLSearchParams(fields).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}), ...headers },
        redirect: "manual",
      });
      remember(response);
      return { status: response.status, headers: response.headers, text: await response.text() };
    },
    /** The CSRF token embedded in a page. */
    token(page: string): string {
      const match = /name="_csrf" value="([^"]+)"/.exec(page);
      if (!match) throw new Error("no CSRF token in the page");
      return match[1]!;
    },
  };
}

/** The number shown in an overview card. */
export function metric(page: string, name: string): string {
  const match = new RegExp(`data-metric="${name}"><dt>.*?</dt><dd>([^<]*)</dd>`).exec(page);
  if (!match) throw new Error(`no metric ${name} in the page`);
  return match[1]!;
}

/**
 * Seeds a known queue: 3 due + 1 scheduled `email` jobs, 2 `resize` jobs completed,
 * 2 dead `email_dead` jobs (one with a `<script>` payload) that failed once each with
 * "SMTP 421 try later", and 1 dead `pdf` job. Returns the dead ids.
 */
export async function seedQueue(errand: Errand) {
  const resize = await errand.enqueueMany([{ kind: "resize", payload: { w: 256 } }, { kind: "resize", payload: { w: 512 } }]);
  const dead = await errand.enqueueMany([
    { kind: "email_dead", payload: { to: "x@example.com" }, maxAttempts: 1 },
    { kind: "email_dead", payload: { html: "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned=2\">" }, maxAttempts: 1 },
    { kind: "pdf", payload: { invoice: 7 }, maxAttempts: 1 },
  ]);
  const worker = errand.worker({
    handlers: {
      resize: async () => {},
      email_dead: async () => { throw new Error("SMTP 421 try later\n    at send (mail.ts:10)"); },
      pdf: async () => { throw new Error("renderer crashed"); },
    },
  });
  while ((await worker.runOnce()) > 0);
  await worker.stop();
  // Enqueued after the worker ran, so they stay ready (the worker claims every kind).
  await errand.enqueueMany([
    { kind: "email", payload: { to: "a@example.com" }, dedupeKey: "welcome:a" },
    { kind: "email", payload: { to: "b@example.com" } },
    { kind: "email", payload: { to: "c@example.com" } },
    { kind: "email", payload: { to: "later@example.com" }, delay: 3_600_000 },
  ]);
  return { resize: resize.map((r) => r.id), dead: dead.map((r) => r.id) };
}
