// The peers' "best" settings: found by `npm run bench:sweep` (bench/sweep.js) and kept in
// bench/peer-settings.json, which `npm run bench` reads for each peer's process_best row.
// Settings are flat "knobs" (see each adapter's `options()`), so they read well in a table.
import { readFileSync } from "node:fs";

export const peerSettingsUrl = new URL("../peer-settings.json", import.meta.url);

/** The committed sweep results ({ peers: { [system]: { best, … } } }), or none yet. */
export function readPeerSettings() {
  try {
    return JSON.parse(readFileSync(peerSettingsUrl, "utf8"));
  } catch (error) {
    if (error.code === "ENOENT") return { peers: {} };
    throw error;
  }
}

/** The swept best knobs for `system`, or `fallback` when no sweep has run for it. */
export function sweptBest(system, fallback) {
  return readPeerSettings().peers?.[system]?.best ?? fallback;
}

/** The knobs for a worker `mode`: "json:{…}" (a sweep point, bench/tune.js) or a named mode of `settings`. */
export function knobsFor(settings, mode) {
  if (mode.startsWith("json:")) return JSON.parse(mode.slice(5));
  const knobs = settings[mode];
  if (!knobs) throw new Error(`unknown worker mode ${mode}`);
  return knobs;
}

/** "a 1, b 2" for knobs { a: 1, b: 2 } ("defaults" when empty). */
export function describeKnobs(knobs) {
  const parts = Object.entries(knobs).map(([k, v]) => `${k} ${v}`);
  return parts.length ? parts.join(", ") : "defaults";
}
