import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ValidationError } from "../errors.js";

/**
 * Who may open the dashboard. With a token, send `Authorization: Bearer <token>` (or, from
 * a browser, basic auth with any user name and the token as the password).
 */
export type DashboardAuth = { readonly token: string } | { readonly user: string; readonly password: string };

/**
 * Reads the auth setting from `ERRAND_DASHBOARD_TOKEN`, or `ERRAND_DASHBOARD_USER` and
 * `ERRAND_DASHBOARD_PASSWORD` (both needed). Returns undefined when none is set.
 */
export function authFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): DashboardAuth | undefined {
  const token = env.ERRAND_DASHBOARD_TOKEN;
  const user = env.ERRAND_DASHBOARD_USER;
  const password = env.ERRAND_DASHBOARD_PASSWORD;
  if (token) return checkAuth({ token });
  if (user || password) {
    if (!user || !password) throw new ValidationError(user ? "ERRAND_DASHBOARD_PASSWORD" : "ERRAND_DASHBOARD_USER", "basic auth needs both ERRAND_DASHBOARD_USER and ERRAND_DASHBOARD_PASSWORD");
    return checkAuth({ user, password });
  }
  return undefined;
}

/** Validates an auth setting (a short secret is refused). */
export function checkAuth(auth: DashboardAuth): DashboardAuth {
  if ("token" in auth) {
    if (typeof auth.token !== "string" || auth.token.length < 16) throw new ValidationError("auth.token", "must be a string of at least 16 characters");
    return auth;
  }
  if (typeof auth.user !== "string" || !auth.user || auth.user.includes(":")) throw new ValidationError("auth.user", "must be a non-empty string without ':'");
  if (typeof auth.password !== "string" || auth.password.length < 12) throw new ValidationError("auth.password", "must be a string of at least 12 characters");
  return auth;
}

/** Constant-time string comparison (hashing first hides the length too). */
function same(a: string, b: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** True when the `Authorization` header satisfies `auth`. */
export function authorized(auth: DashboardAuth, header: string | undefined): boolean {
  if (!header) return false;
  const [scheme, value = ""] = header.split(" ", 2);
  if ("token" in auth && scheme?.toLowerCase() === "bearer") return same(value.trim(), auth.token);
  if (scheme?.toLowerCase() !== "basic") return false;
  const decoded = Buffer.from(value.trim(), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return false;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if ("token" in auth) return same(password, auth.token);
  return same(user, auth.user) && same(password, auth.password);
}

/**
 * CSRF tokens bound to a per-browser nonce cookie and signed with a per-process secret:
 * a form's token is HMAC(secret, nonce). Another site can neither read the token nor
 * forge one, and a restart invalidates every old token.
 */
export class CsrfTokens {
  readonly #secret: Buffer;

  constructor(secret: Buffer = randomBytes(32)) {
    this.#secret = secret;
  }

  /** A fresh nonce for the cookie. */
  nonce(): string {
    return randomBytes(18).toString("base64url");
  }

  /** The form token for a nonce. */
  token(nonce: string): string {
    return createHmac("sha256", this.#secret).update(`errand-dashboard-csrf:${nonce}`).digest("base64url");
  }

  /** True when `token` was issued for `nonce` by this process. */
  verify(nonce: string | undefined, token: unknown): boolean {
    if (!nonce || typeof token !== "string" || token.length === 0) return false;
    return same(token, this.token(nonce));
  }
}

/**
 * A POST's origin is acceptable when neither `Origin` nor `Referer` names another host
 * than the request's `Host` — or names one of `trusted` (exact origins, for a proxy that
 * rewrites `Host`) — and the browser does not flag it cross-site.
 */
export function sameOrigin(
  headers: { origin?: string | undefined; referer?: string | undefined; host?: string | undefined; fetchSite?: string | undefined },
  trusted: ReadonlySet<string> = new Set(),
): boolean {
  const source = headers.origin ?? headers.referer;
  if (source === "null") return false;
  let url: URL | undefined;
  try {
    url = source === undefined ? undefined : new URL(source);
  } catch {
    return false;
  }
  if (url && trusted.has(url.origin)) return true;
  if (headers.fetchSite === "cross-site") return false;
  return url === undefined || url.host === headers.host;
}

/**
 * Validates the origins a dashboard behind a proxy accepts POSTs from: each must be a
 * bare origin such as `https://ops.example.com` or `http://10.0.0.5:8080` (no path).
 */
export function checkTrustedOrigins(value: unknown, field = "trustedOrigins"): Set<string> {
  if (!Array.isArray(value)) throw new ValidationError(field, "must be an array of origins such as https://ops.example.com");
  return new Set(
    value.map((item: unknown, i) => {
      let url: URL | undefined;
      try {
        url = typeof item === "string" ? new URL(item) : undefined;
      } catch {
        url = undefined;
      }
      if (typeof item !== "string" || !url || !["http:", "https:"].includes(url.protocol) || url.origin !== item.replace(/\/$/, "")) {
        throw new ValidationError(`${field}[${i}]`, `must be an origin like https://ops.example.com (scheme, host and port only), not ${JSON.stringify(item)}`);
      }
      return url.origin;
    }),
  );
}
