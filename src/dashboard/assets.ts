/**
 * The dashboard's only assets, served by the dashboard itself (no CDN, no external
 * request): one stylesheet and one small script for progressive enhancement. Every
 * page works without the script.
 */

/** The stylesheet: light and dark through `prefers-color-scheme`, visible focus, narrow screens. */
export const css = `
:root { color-scheme: light dark; --bg: #f7f7f8; --fg: #1b1d21; --muted: #5b6170; --card: #ffffff; --line: #d9dce3;
  --accent: #1d5fd1; --accent-fg: #ffffff; --ok: #1e7a3c; --warn: #8a5a00; --bad: #b3261e; --info: #3a55a5;
  --focus: #f5a400; --done-bar: #2f8f55; --fail-bar: #c8372d; --code: #eef0f4; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #121418; --fg: #e6e8ec; --muted: #a3a9b7; --card: #1b1e24; --line: #343a46;
    --accent: #7aa7ff; --accent-fg: #0d1117; --ok: #6fd08f; --warn: #f0c060; --bad: #ff8a80; --info: #9db4ff;
    --focus: #ffcc4d; --done-bar: #57c27f; --fail-bar: #ff6b5e; --code: #232730; }
}
* { box-sizing: border-box; }
html { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
body { margin: 0; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--card); padding: .5rem 1rem; }
.skip:focus { left: 1rem; z-index: 10; }
header.top { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; padding: .75rem 1.25rem; background: var(--card); border-bottom: 1px solid var(--line); }
header.top .brand { font-weight: 700; font-size: 1.1rem; color: var(--fg); text-decoration: none; }
nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
nav a { text-decoration: none; padding: .25rem .1rem; border-bottom: 2px solid transparent; }
nav a[aria-current="page"] { border-bottom-color: var(--accent); color: var(--fg); font-weight: 600; }
.mode { margin-left: auto; color: var(--muted); font-size: .9rem; }
main { max-width: 80rem; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(10rem, 1fr)); gap: .75rem; margin: 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; }
.card dt { color: var(--muted); font-size: .85rem; }
.card dd { margin: 0; font-size: 1.6rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.card.alert { border-color: var(--bad); }
.card.alert dd { color: var(--bad); }
.table-wrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: .5rem; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
caption { text-align: left; padding: .6rem .75rem; font-weight: 600; }
th, td { padding: .45rem .75rem; border-top: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-size: .85rem; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; }
td.error { max-width: 36rem; overflow-wrap: anywhere; }
.status { display: inline-block; padding: 0 .45rem; border-radius: 1rem; border: 1px solid currentColor; font-size: .8rem; font-weight: 600; }
.status-ready { color: var(--info); } .status-running { color: var(--warn); } .status-done { color: var(--ok); } .status-dead { color: var(--bad); } .status-cancelled { color: var(--muted); }
form.filters { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; margin-bottom: 1rem; }
form.filters label, .field label { display: block; font-size: .85rem; color: var(--muted); }
input, select, button { font: inherit; color: inherit; }
input[type="text"], input[type="search"], select { background: var(--card); border: 1px solid var(--line); border-radius: .35rem; padding: .35rem .5rem; min-width: 10rem; }
button, .button { display: inline-block; background: var(--accent); color: var(--accent-fg); border: 1px solid var(--accent); border-radius: .35rem; padding: .35rem .8rem; cursor: pointer; text-decoration: none; }
button.secondary, .button.secondary { background: transparent; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); color: var(--accent-fg); }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; margin: .75rem 0; }
.inline { display: inline; }
.pager { display: flex; gap: 1rem; margin: .75rem 0; }
.notice { border: 1px solid var(--ok); border-left-width: .4rem; background: var(--card); padding: .6rem 1rem; border-radius: .35rem; margin-bottom: 1rem; }
.notice.error { border-color: var(--bad); }
.muted { color: var(--muted); }
pre { background: var(--code); padding: .75rem; border-radius: .35rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
figure.chart { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem; }
figure.chart svg { width: 100%; height: auto; display: block; }
figure.chart figcaption { font-weight: 600; margin-bottom: .5rem; }
.legend { display: flex; gap: 1rem; font-size: .85rem; color: var(--muted); margin-top: .25rem; }
.swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: .15rem; vertical-align: -.1rem; margin-right: .3rem; }
.bar-done, .swatch.done { fill: var(--done-bar); background: var(--done-bar); }
.bar-failed, .swatch.failed { fill: var(--fail-bar); background: var(--fail-bar); }
.axis { stroke: var(--line); } .axis-label { fill: var(--muted); font-size: 11px; }
details { margin-top: .5rem; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 40rem) { main { padding: .75rem; } .cards { grid-template-columns: repeat(2, 1fr); } dl.facts { grid-template-columns: 1fr; } dl.facts dd { margin-bottom: .4rem; } }
`;

/** The script: auto-refresh of pages marked `data-refresh`, and "select all" checkboxes. */
export const js = `"use strict";
(function () {
  var main = document.querySelector("main[data-refresh]");
  if (main) {
    var seconds = Number(main.getAttribute("data-refresh")) || 5;
    var paused = false;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "secondary";
    button.setAttribute("aria-pressed", "false");
    button.textContent = "Pause auto-refresh";
    button.addEventListener("click", function () {
      paused = !paused;
      button.setAttribute("aria-pressed", String(paused));
      button.textContent = paused ? "Resume auto-refresh" : "Pause auto-refresh";
    });
    var slot = document.getElementById("refresh-slot");
    if (slot) slot.appendChild(button);
    var refresh = function () {
      if (paused || document.hidden) return;
      var active = document.activeElement;
      if (active && active !== document.body && main.contains(active)) return;
      fetch(location.href, { headers: { "X-Errand-Refresh": "1" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (text) {
          var next = new DOMParser().parseFromString(text, "text/html").querySelector("main[data-refresh] #live");
          var live = document.getElementById("live");
          if (next && live) live.replaceWith(document.importNode(next, true));
        })
        .catch(function () {});
    };
    setInterval(refresh, seconds * 1000);
  }
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box || !box.matches || !box.matches("input[data-select-all]")) return;
    var form = box.form;
    if (!form) return;
    form.querySelectorAll('input[type="checkbox"][name="id"]').forEach(function (c) { c.checked = box.checked; });
  });
})();
`;
