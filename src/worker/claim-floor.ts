import type { Clock } from "../clock.js";

/** A job's place in claim order (the ready index's key): priority descending, then run_at, then id. */
export interface ClaimKey {
  readonly priority: number;
  /** run_at in epoch microseconds: exact (the statements' float milliseconds carry them, see keyOf). */
  readonly runAtUs: number;
  readonly id: bigint;
}

/** A job's place in claim order as the statements return it (a claimed row, the probe's and the hint's answers). */
export interface KeyRow {
  readonly id: string | number;
  readonly priority: number;
  /** run_at in epoch milliseconds (float8): cheaper to read than a timestamptz's text. */
  readonly run_at_ms: number;
}

/** Looks from the start take at most 1/this of the time, where they are slow (see ClaimFloor). */
export const fromStartShare = 20;
/** The longest the floor goes without a look from the start, in poll intervals, however slow such a look is. */
export const maxPollIntervals = 10;

/**
 * What a claim started from: the floor's key (undefined: from the start), the floor's
 * lowerings then, and whether it may start where the other workers' claims left off instead
 * (see {@link ClaimFloor.sharing}).
 */
export interface ClaimStart {
  readonly key: ClaimKey | undefined;
  readonly lowered: number;
  readonly shared: boolean;
  /** The claim's place among this floor's claims (1, 2, …). */
  readonly seq: number;
}

/** A probe in flight: when it was sent (process clock), the drops before it, and the floor's priority (whose range it reads from its ready mark). */
export interface ProbeStart {
  readonly sentAt: number;
  readonly drops: number;
  readonly priority: number;
}

/**
 * Where a producer's next claim starts in the ready index (see `claimFrom` in
 * src/sql/jobs.ts): after the last job it claimed, so it does not read again the dead
 * index entries that every claimed job leaves in front of it until VACUUM removes them.
 * Reading them once, to the first live one, takes long where there are many: 10,000,000
 * never read before take seconds. So no claim does it while there is a floor: the floor
 * is checked by a probe (`firstReady`) that the producer sends beside its claims and does
 * not wait for, and that lowers the floor to the first ready job when that job lies below it.
 * The probe reads the floor's priority from its queue's ready mark (migration 028), below
 * which no job is ready, raised first: it reads the dead entries left since the last raise,
 * not all of them (where no mark can be raised, it reads from the start).
 *
 * A job can become ready below the floor. Where the worker is told, it probes at once
 * ({@link ClaimFloor.drop}): jobs given back by any worker (the release's `returned`
 * notice), rescued by this process, of a kind or queue just resumed. A job inserted by a
 * transaction that began below the floor (one that ran longer than the claim's slack while
 * claims went past its start) is read by the next claim, which starts at that transaction's
 * start (the insert's notice carries it, {@link ClaimFloor.since}), or by a probe at once
 * when that start lies more than a poll interval below. errand's own enqueues of jobs given a
 * run_at before their transaction began (a schedule's missed slot, a runAt from a clock
 * behind the server's) send the earliest such run_at the same way. Where the worker is not
 * told (nor is a worker that does not listen) — a job inserted by plain SQL with a run_at
 * before its transaction began, rescued by another process (its run_at is the rescue's
 * now(), below the floor only when a claim passed that time while the rescue was in
 * flight), a row another worker's claim skipped and then rolled back — the job is not lost:
 * a probe goes out one poll interval after the last look from the start. A job below the
 * floor waits at most that long (and the probe's own time) for a worker with a free slot —
 * the bound a missed notification already has — and may run that much out of claim order.
 * Where a look from the start is slow (many dead entries), the floor goes longer without
 * one, so that those looks take at most 1/{@link fromStartShare} of the time, up to
 * {@link maxPollIntervals} poll intervals.
 *
 * A claim from the floor starts further on where the newest claim of another worker of the
 * same queue and kinds left off beyond it (`claimFrom`, migration 022): otherwise it reads
 * again every job the other workers claimed since its own last claim. Everything before
 * where that claim left off was claimed or held by a claim; a job left there (a claim that
 * held it rolled back) is found by the next look from the start, which lowers the floor once
 * this worker's claims have passed it, so such a job waits up to two looks' intervals.
 * Claims start from the floor alone ({@link ClaimFloor.sharing}) once the floor was lowered,
 * until one comes back short of its limit (the jobs below are claimed in order, not skipped
 * again), after a drop, until a claim sent after the drop's probe came back (the job
 * given back lies below the floor, where the probe lowers it, or after it, where that claim
 * reads it first), and for one claim after a shared claim that left the floor where it was
 * (it took nothing after where the others left off, so the probe would not see a job left
 * between).
 *
 * A producer with no floor yet claims from the start, unless a hint says where its queue's
 * claims left off (the last job of the queue that finished, {@link ClaimFloor.hint}): on a
 * restart beside a long unvacuumed history, its first claim then does not wait for that
 * read. The hint counts as a look from the start: a job below it (given back by the
 * worker that stopped) waits for the probe a poll interval later.
 */
export class ClaimFloor {
  readonly #clock: Clock;
  readonly #pollIntervalMs: number;
  /** How long the floor goes without a look from the start (see the class's comment). */
  #maxAgeMs: number;
  #key: ClaimKey | undefined;
  /** When the last look from the start (a claim from the start, a probe, the hint) was sent (process clock). */
  #lookedAt = -Infinity;
  /** Times a probe or a notice lowered the floor: a claim in flight then must not raise it past that. */
  #lowered = 0;
  /** Times the floor was dropped: a probe in flight at a drop may not have seen the jobs below. */
  #drops = 0;
  /** A drop asks for a probe at once. */
  #wanted = false;
  #probing = false;
  /** Not sharing until a claim from the lowered floor comes back short (see {@link ClaimFloor.sharing}). */
  #awaitShort = false;
  /** Not sharing after a drop (until its probe returns, then until claim number `n` comes back) or after a shared claim that left the floor where it was (until claim `n`). */
  #awaitProbe: "probe" | number | undefined;
  /** Claims started so far. */
  #seq = 0;

  constructor(clock: Clock, pollIntervalMs: number) {
    this.#clock = clock;
    this.#pollIntervalMs = pollIntervalMs;
    this.#maxAgeMs = pollIntervalMs;
  }

  /** Where the next claim starts: from the floor's key, or from the start (no floor yet). */
  start(): ClaimStart {
    return { key: this.#key, lowered: this.#lowered, shared: this.sharing, seq: ++this.#seq };
  }

  /**
   * Whether the next claim may start where the other workers' claims left off: not from the
   * floor's lowering until a claim from the floor alone comes back short of its limit, not
   * from a drop until a claim sent after the drop's probe returned has come back, and not
   * for the claim after a shared one that left the floor where it was.
   */
  get sharing(): boolean {
    return !this.#awaitShort && this.#awaitProbe === undefined;
  }

  /** Whether there is no floor and no hint was taken yet. */
  get unset(): boolean {
    return this.#key === undefined && this.#lookedAt === -Infinity;
  }

  /** Whether to send a probe now: there is a floor, it was dropped or went its lifetime without a look from the start, and no probe is out. */
  probeDue(): boolean {
    return this.#key !== undefined && !this.#probing && (this.#wanted || this.#clock.now() - this.#lookedAt >= this.#maxAgeMs);
  }

  /** A probe goes out. */
  probing(): ProbeStart {
    this.#probing = true;
    this.#wanted = false;
    return { sentAt: this.#clock.now(), drops: this.#drops, priority: this.#key?.priority ?? 0 };
  }

  /**
   * The probe that began at `start` found `first`, the first ready job (undefined: none),
   * or failed (`failed`: the next claim sends another). Returns true when the floor moved
   * down to that job: jobs wait below where the last claim looked.
   */
  probed(first: ClaimKey | undefined, start: ProbeStart, failed = false): boolean {
    this.#probing = false;
    if (failed) return false;
    if (start.drops === this.#drops) this.#looked(start.sentAt); // dropped meanwhile: the wanted probe still goes
    // The drop's probe: what was given back lies from `first` on, which the floor now reaches
    // or the next claim from the floor alone reads first.
    if (this.#awaitProbe === "probe" && start.drops === this.#drops) this.#awaitProbe = this.#seq + 1;
    if (first === undefined || this.#key === undefined || !before(first, this.#key)) return false;
    this.#lower(first);
    return true;
  }

  /** Where the queue's claims left off (the hint's answer, undefined: unknown), asked at `sentAt`: the first floor. */
  hint(key: ClaimKey | undefined, sentAt: number): void {
    if (this.#key !== undefined) return;
    this.#key = key;
    this.#lookedAt = sentAt;
  }

  /**
   * Records the rows of a claim of up to `limit` that began at `start`, sent at `sentAt`
   * (process clock): the floor moves past them.
   */
  claimed(rows: readonly KeyRow[], start: ClaimStart, sentAt: number, limit: number): void {
    if (start.key === undefined) this.#looked(sentAt);
    if (start.lowered !== this.#lowered) return; // a probe lowered the floor meanwhile: it stays there
    if (!start.shared) {
      if (rows.length < limit) this.#awaitShort = false; // nothing more to take from the floor on
      if (typeof this.#awaitProbe === "number" && start.seq >= this.#awaitProbe) this.#awaitProbe = undefined;
    }
    // The last row in claim order, compared on the row's own values (run_at_ms orders as
    // run_at does: a microsecond is wider than its error); one key is made, for it alone.
    let last: KeyRow | undefined;
    for (const row of rows) if (last === undefined || rowBefore(last, row)) last = row;
    const key = last === undefined ? undefined : keyOf(last);
    const moved = key !== undefined && (start.key === undefined || !before(key, start.key));
    this.#key = moved ? key : start.key;
    if (!moved && start.shared && start.key !== undefined && this.#awaitProbe !== "probe") {
      // Nothing taken after where the others left off (none at all, or only jobs of a higher
      // priority), and the floor stays below that place: a job between the two (a late
      // transaction's, one given back) is neither below the floor for the probe nor read by
      // a shared claim. The next claim reads from the floor alone.
      this.#awaitProbe = Math.max(this.#awaitProbe ?? 0, this.#seq + 1);
    }
  }

  /**
   * Jobs were inserted by a transaction that began at `startUs` (epoch µs on the server's
   * clock, from the insert's notice): their run_at is no earlier unless given. When that is
   * below the floor by up to a poll interval, the floor moves down to it (the floor's
   * priority, that time, id 0; other priorities are read from their start anyway): the next
   * claim reads the entries of the jobs claimed since then once, as many as the transaction
   * was long, instead of waiting for a probe. Further below, that read could hold up the
   * claims for long (minutes of dead entries on a table VACUUM has not cleaned): a probe,
   * which claims do not wait for, looks at once instead ({@link drop}).
   */
  since(startUs: number): void {
    if (this.#key === undefined || startUs >= this.#key.runAtUs) return;
    if (this.#key.runAtUs - startUs > this.#pollIntervalMs * 1000) return this.drop();
    this.#lower({ priority: this.#key.priority, runAtUs: startUs, id: 0n });
  }

  /** Jobs are ready below the floor (given back, rescued, resumed): the next claim sends a probe. */
  drop(): void {
    this.#drops++;
    this.#wanted = true;
    this.#awaitProbe = "probe";
  }

  /** Jobs wait from `key` on: the next claims start there, without the other workers' claims' ends. */
  #lower(key: ClaimKey): void {
    this.#key = key;
    this.#lowered++;
    this.#awaitShort = true;
  }

  /** A look from the start was sent at `sentAt`: the floor lives from then, as long as the look's time allows. */
  #looked(sentAt: number): void {
    this.#lookedAt = sentAt;
    const tookMs = this.#clock.now() - sentAt;
    this.#maxAgeMs = Math.min(maxPollIntervals * this.#pollIntervalMs, Math.max(this.#pollIntervalMs, fromStartShare * tookMs));
  }
}

/** The claim key of a row. */
export function keyOf(row: KeyRow): ClaimKey {
  // run_at_ms is a float8 of about 1.8e12 with three decimals: its error (under 0.13 µs)
  // is below half a microsecond even after the multiplication, so rounding recovers run_at.
  return { priority: Number(row.priority), runAtUs: Math.round(Number(row.run_at_ms) * 1000), id: BigInt(row.id) };
}

/** Whether row `a` comes before row `b` in claim order. */
function rowBefore(a: KeyRow, b: KeyRow): boolean {
  if (a.priority !== b.priority) return Number(a.priority) > Number(b.priority);
  if (a.run_at_ms !== b.run_at_ms) return Number(a.run_at_ms) < Number(b.run_at_ms);
  const [x, y] = [String(a.id), String(b.id)]; // bigint ids as decimal text: shorter is smaller
  return x.length !== y.length ? x.length < y.length : x < y;
}

/** Whether `a` comes before `b` in claim order. */
export function before(a: ClaimKey, b: ClaimKey): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.runAtUs !== b.runAtUs) return a.runAtUs < b.runAtUs;
  return a.id < b.id;
}
