import { describe, expect, it } from "vitest";
import { html, unsafeRaw } from "./html.js";
import { duration } from "./layout.js";
import { CsrfTokens, authFromEnv, authorized, checkTrustedOrigins, sameOrigin } from "./security.js";

describe("html", () => {
  it("escapes every interpolated string, including in attributes and lists", () => {
    const evil = `<script>alert("x")</script>' onload='x`;
    expect(html`<p title="${evil}">${evil}</p>`.value).toBe(
      "<p title=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onload=&#39;x\">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onload=&#39;x</p>",
    );
    expect(html`<ul>${["<a>", html`<li>ok</li>`, null, false, 3]}</ul>`.value).toBe("<ul>&lt;a&gt;<li>ok</li>3</ul>");
    expect(html`${unsafeRaw("<b>")}`.value).toBe("<b>");
  });
});

describe("duration", () => {
  it("reads like a person would say it", () => {
    expect([0.25, 42, 185, 7_800, 270_000].map(duration)).toEqual(["250 ms", "42 s", "3 min 5 s", "2 h 10 min", "3 d 3 h"]);
    expect(duration(null)).toBe("—");
  });
});

describe("CSRF tokens", () => {
  it("accept only the token issued for this nonce by this process", () => {
    const tokens = new CsrfTokens();
    const nonce = tokens.nonce();
    expect(tokens.verify(nonce, tokens.token(nonce))).toBe(true);
    expect(tokens.verify(tokens.nonce(), tokens.token(nonce))).toBe(false);
    expect(tokens.verify(nonce, new CsrfTokens().token(nonce))).toBe(false);
    expect(tokens.verify(undefined, tokens.token(nonce))).toBe(false);
    expect(tokens.verify(nonce, "")).toBe(false);
    expect(tokens.verify(nonce, ["x"])).toBe(false);
  });
});

describe("origin check", () => {
  it("refuses another host, a null origin and a cross-site fetch; allows same host or none", () => {
    expect(sameOrigin({ origin: "http://127.0.0.1:4000", host: "127.0.0.1:4000" })).toBe(true);
    expect(sameOrigin({ referer: "http://127.0.0.1:4000/dead", host: "127.0.0.1:4000" })).toBe(true);
    expect(sameOrigin({ host: "127.0.0.1:4000" })).toBe(true);
    expect(sameOrigin({ origin: "http://127.0.0.1:5000", host: "127.0.0.1:4000" })).toBe(false);
    expect(sameOrigin({ origin: "null", host: "127.0.0.1:4000" })).toBe(false);
    expect(sameOrigin({ origin: "not a url", host: "127.0.0.1:4000" })).toBe(false);
    expect(sameOrigin({ host: "127.0.0.1:4000", fetchSite: "cross-site" })).toBe(false);
  });

  it("accepts a trusted origin whatever Host the proxy sent, and only that exact origin", () => {
    const trusted = checkTrustedOrigins(["https://ops.example.com", "http://10.0.0.5:8080/"]);
    expect(sameOrigin({ origin: "https://ops.example.com", host: "127.0.0.1:4000" }, trusted)).toBe(true);
    expect(sameOrigin({ referer: "http://10.0.0.5:8080/dead?kind=x", host: "127.0.0.1:4000" }, trusted)).toBe(true);
    expect(sameOrigin({ origin: "http://ops.example.com", host: "127.0.0.1:4000" }, trusted)).toBe(false);
    expect(sameOrigin({ origin: "https://ops.example.com:8443", host: "127.0.0.1:4000" }, trusted)).toBe(false);
    expect(sameOrigin({ origin: "https://evil.example", host: "127.0.0.1:4000" }, trusted)).toBe(false);
  });

  it("refuses a trusted origin that is not a bare http(s) origin, naming its position", () => {
    expect(() => checkTrustedOrigins(["https://ops.example.com/errand"])).toThrow(/trustedOrigins\[0\]: must be an origin/);
    expect(() => checkTrustedOrigins(["https://a.example", "ops.example.com"])).toThrow(/trustedOrigins\[1\]/);
    expect(() => checkTrustedOrigins(["ftp://a.example"])).toThrow(/trustedOrigins\[0\]/);
    expect(() => checkTrustedOrigins([42])).toThrow(/trustedOrigins\[0\]/);
    expect(() => checkTrustedOrigins("https://a.example")).toThrow(/trustedOrigins: must be an array/);
  });
});

describe("auth", () => {
  it("reads the token or user/password from the environment, refusing half a setting", () => {
    expect(authFromEnv({})).toBeUndefined();
    expect(authFromEnv({ ERRAND_DASHBOARD_TOKEN: "0123456789abcdef" })).toEqual({ token: "0123456789abcdef" });
    expect(authFromEnv({ ERRAND_DASHBOARD_USER: "ops", ERRAND_DASHBOARD_PASSWORD: "long enough pw" })).toEqual({ user: "ops", password: "long enough pw" });
    expect(() => authFromEnv({ ERRAND_DASHBOARD_USER: "ops" })).toThrow(/ERRAND_DASHBOARD_PASSWORD/);
    expect(() => authFromEnv({ ERRAND_DASHBOARD_TOKEN: "short" })).toThrow(/auth\.token/);
  });

  it("checks bearer and basic credentials", () => {
    const token = { token: "0123456789abcdef" };
    const basic = (s: string) => `Basic ${Buffer.from(s).toString("base64")}`;
    expect(authorized(token, "Bearer 0123456789abcdef")).toBe(true);
    expect(authorized(token, basic("anyone:0123456789abcdef"))).toBe(true);
    expect(authorized(token, "Bearer 0123456789abcdeX")).toBe(false);
    expect(authorized(token, undefined)).toBe(false);
    const user = { user: "ops", password: "long enough pw" };
    expect(authorized(user, basic("ops:long enough pw"))).toBe(true);
    expect(authorized(user, basic("root:long enough pw"))).toBe(false);
    expect(authorized(user, "Bearer long enough pw")).toBe(false);
  });
});
