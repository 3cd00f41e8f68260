import type { Cron } from "croner";
import type { MissedPolicy, OverlapPolicy } from "./spec.js";

/** What one tick does with one due schedule. */
export interface SlotDecision {
  /** Slots to enqueue now, oldest first. */
  readonly enqueue: readonly Date[];
  /** Slots not enqueued because of the overlap policy, with the reason. */
  readonly skipped: readonly { readonly slot: Date; readonly reason: string }[];
  /** Missed slots dropped by the missed-run policy (first and last), if any. */
  readonly missed: { readonly from: Date; readonly to: Date; readonly reason: string } | null;
  /** The schedule's next unhandled slot; null when the cron has no more. */
  readonly next: Date | null;
  /** The latest slot handled by this decision (enqueued, skipped or dropped), if any. */
  readonly lastHandled: Date | null;
}

/** What {@link decideSlots} needs to know about one schedule at one instant. */
export interface SlotInput {
  readonly cron: Cron;
  /** The schedule's next unhandled slot (a slot of `cron`, at or before `now`). */
  readonly next: Date;
  readonly now: Date;
  readonly graceMs: number;
  readonly missed: MissedPolicy;
  readonly catchUpLimit: number;
  readonly overlap: OverlapPolicy;
  /** The schedule's previous job is still `ready` or `running` (only asked when overlap is `skip`). */
  readonly inFlight: boolean;
}

/** Slots later than now − grace are on time; at most this many are handled per tick. */
const maxOnTime = 1_000;

/**
 * Decides, without I/O, which slots of a due schedule to enqueue, skip or drop.
 *
 * - Slots within `graceMs` of now are on time and always candidates.
 * - Older ones were missed: `skip` drops them, `latest` keeps the most recent, `catch_up`
 *   keeps the most recent `catchUpLimit`.
 * - Overlap `allow` enqueues every candidate. Overlap `skip` enqueues only the latest
 *   candidate, and none while the previous run is in flight (they are recorded as
 *   skipped) — except under `catch_up`, where candidates wait their turn instead: one is
 *   enqueued when the previous run has finished, oldest first.
 *
 * The next slot is always computed from the last slot handled (never from "now"), so a
 * local time repeated by a DST fall-back cannot be enqueued twice.
 */
export function decideSlots(input: SlotInput): SlotDecision {
  const { cron, next, now } = input;
  const cutoff = new Date(now.getTime() - input.graceMs);

  const onTime: Date[] = [];
  let slot: Date | null = next >= cutoff ? next : cron.nextRun(new Date(cutoff.getTime() - 1));
  while (slot && slot <= now && onTime.length < maxOnTime) {
    onTime.push(slot);
    slot = cron.nextRun(slot);
  }

  let kept: Date[] = [];
  let missed: SlotDecision["missed"] = null;
  if (next < cutoff) {
    const latestMissed = cron.previousRuns(1, cutoff)[0] ?? next;
    const keep = input.missed === "skip" ? 0 : input.missed === "latest" ? 1 : input.catchUpLimit;
    kept = keep === 0 ? [] : cron.previousRuns(keep, cutoff).filter((s) => s >= next).reverse();
    const firstKept = kept[0];
    const lastDropped = firstKept === undefined ? latestMissed : cron.previousRuns(1, firstKept)[0];
    if (lastDropped && lastDropped >= next) {
      const why = input.missed === "skip" ? "not run (missed: 'skip')" : input.missed === "latest" ? "superseded by a later missed slot (missed: 'latest')" : `beyond the catch-up limit of ${input.catchUpLimit}`;
      missed = { from: next, to: lastDropped, reason: `missed: no scheduler ran within ${input.graceMs} ms of these slots; ${why}` };
    }
  }

  const candidates = [...kept, ...onTime];
  const lastDue = candidates.at(-1) ?? missed?.to ?? null;
  const after = (s: Date | null) => (s ? cron.nextRun(s) : next);

  if (input.overlap === "allow") {
    return { enqueue: candidates, skipped: [], missed, next: after(lastDue), lastHandled: lastDue };
  }
  if (input.missed === "catch_up") {
    const first = candidates[0];
    const base = missed?.to ?? null;
    if (first === undefined) return { enqueue: [], skipped: [], missed, next: after(base), lastHandled: base };
    if (input.inFlight) return { enqueue: [], skipped: [], missed, next: first, lastHandled: base };
    return { enqueue: [first], skipped: [], missed, next: cron.nextRun(first), lastHandled: first };
  }
  const chosen = input.inFlight ? undefined : candidates.at(-1);
  const reason = input.inFlight ? "overlap: the previous run is still ready or running (overlap: 'skip')" : "overlap: a later slot was due in the same tick (overlap: 'skip')";
  const skipped = candidates.filter((s) => s !== chosen).map((s) => ({ slot: s, reason }));
  return { enqueue: chosen ? [chosen] : [], skipped, missed, next: after(lastDue), lastHandled: lastDue };
}
