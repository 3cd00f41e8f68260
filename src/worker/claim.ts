import type { Clock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import { ErrandError } from "../errors.js";
import { type RetryPolicy, decodeRetryPolicy } from "../retry-policy.js";
import type { Json } from "../payload.js";
import type { Queries } from "../sql/jobs.js";
import { ClaimFloor, type KeyRow, keyOf } from "./claim-floor.js";
import { type ClaimedJob, describeError } from "./executor.js";
import type { KeyedClaim } from "./keyed-claim.js";
import type { LocalLeases } from "./leases.js";
import type { QueueGate } from "./pauses.js";
import type { WorkerEvent, WorkerSettings } from "./worker-options.js";

/** A row of the claim statement (see `claim` in src/sql/jobs.ts). */
export interface ClaimRow extends KeyRow {
  kind: string;
  payload: unknown;
  attempts: number;
  /** False for a reserved row: its attempt is spent when its handler starts. */
  started: boolean;
  max_attempts: number;
  /** jsonb as text: decoded per job, so one odd value cannot fail the batch. */
  retry: string | null;
  /** The job's own maximum run time in ms; null (almost always): its kind's. */
  timeout_ms: number | null;
  /** Epoch milliseconds (float8), as run_at_ms: cheaper to read than a timestamptz's text. */
  created_at_ms: number;
  /** jsonb as text (a checkpoint may be a JSON string), null for a job that never saved one. */
  checkpoint: string | null;
  /** The claim's lease record (migration 021); absent from the rows of a schema before it. */
  lease?: string | number | null;
}

/** One claimed row as a job; `error` says why it cannot run (it fails alone, the batch runs). */
export interface DecodedClaim {
  readonly job: ClaimedJob;
  readonly error: Error | undefined;
}

/**
 * Turns a claimed row into the job its handler sees. Never throws: a `retry` column that
 * is not a retry policy comes back as `error`, and a partial one is completed from
 * `policyFor(kind)`.
 */
export function decodeClaimRow(row: ClaimRow, policyFor: (kind: string) => RetryPolicy): DecodedClaim {
  const id = String(row.id);
  let retry: RetryPolicy | null = null;
  let error: Error | undefined;
  if (row.retry !== null) {
    try {
      retry = decodeRetryPolicy(row.retry, policyFor(row.kind));
    } catch (cause) {
      error = new ErrandError("invalid_job", `job ${id} cannot run: its retry column is not a retry policy (${describeError(cause)})`, { cause });
    }
  }
  const job: ClaimedJob = {
    id,
    kind: row.kind,
    payload: row.payload,
    attempt: row.started ? Number(row.attempts) : Number(row.attempts) + 1,
    maxAttempts: Number(row.max_attempts),
    retry,
    timeoutMs: row.timeout_ms === null || row.timeout_ms === undefined ? null : Number(row.timeout_ms),
    runAt: new Date(Number(row.run_at_ms)),
    createdAt: new Date(Number(row.created_at_ms)),
    // jsonb's text is always JSON: parsing it cannot fail.
    lastCheckpoint: row.checkpoint === null ? undefined : (JSON.parse(row.checkpoint) as Json),
    lease: row.lease === null || row.lease === undefined ? undefined : String(row.lease),
  };
  return { job, error };
}

/** What a {@link Claimer} works with: the parts of its producer that claims use. */
export interface ClaimParts {
  readonly driver: Driver;
  readonly queries: Queries;
  readonly workerId: string;
  /** The queue claimed from. */
  readonly queue: string;
  /** Which kinds it may claim now (see pauses.ts). */
  readonly gate: QueueGate;
  /** The retry policy of a kind (its own, else the default): completes a job's partial one. */
  readonly policyFor: (kind: string) => RetryPolicy;
  readonly settings: Pick<WorkerSettings, "leasesByKind" | "leaseMs" | "pollIntervalMs">;
  /** Where each claimed job's lease is recorded. */
  readonly leases: LocalLeases;
  readonly clock: Clock;
  /** Claims of jobs with a concurrency key (their limits and round-robin: keyed-claim.ts). */
  readonly keyed: KeyedClaim;
  readonly emit: (event: WorkerEvent) => void;
  /** A probe found ready jobs below the claim floor and lowered it: claim again. */
  readonly floorLowered: () => void;
}

/**
 * One producer's claim statements: the plain claim (from the claim floor, see
 * claim-floor.ts) and the keyed claim (see keyed-claim.ts). It records each claimed job's
 * lease, and until the job's handler starts or the job is given back, what the handler
 * start needs to know: whether the claim only reserved the job (its attempt is spent at
 * the start) and, for a row that could not be decoded, the error it fails with instead of running.
 */
export class Claimer {
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #workerId: string;
  readonly #queue: string;
  readonly #gate: QueueGate;
  readonly #policyFor: (kind: string) => RetryPolicy;
  readonly #settings: Pick<WorkerSettings, "leasesByKind" | "leaseMs">;
  readonly #local: LocalLeases;
  readonly #clock: Clock;
  readonly #keyed: KeyedClaim;
  readonly #floor: ClaimFloor;
  readonly #emit: (event: WorkerEvent) => void;
  readonly #floorLowered: () => void;
  /** The claim floor's probe while it is out (see claim-floor.ts). */
  #probe: Promise<void> | undefined;
  /** Claimed jobs the claim only reserved: their start is recorded when their handler starts. */
  readonly #reserved = new Set<ClaimedJob>();
  /** Claimed jobs whose row could not be decoded: they fail with this error instead of running. */
  readonly #undecodable = new Map<ClaimedJob, Error>();

  constructor(parts: ClaimParts) {
    this.#driver = parts.driver;
    this.#queries = parts.queries;
    this.#workerId = parts.workerId;
    this.#queue = parts.queue;
    this.#gate = parts.gate;
    this.#policyFor = parts.policyFor;
    this.#settings = parts.settings;
    this.#local = parts.leases;
    this.#clock = parts.clock;
    this.#keyed = parts.keyed;
    this.#floor = new ClaimFloor(parts.clock, parts.settings.pollIntervalMs);
    this.#emit = parts.emit;
    this.#floorLowered = parts.floorLowered;
  }

  /** Jobs are ready below the claim floor: the next plain claim sends the floor's probe (see {@link ClaimFloor.drop}). */
  dropFloor(): void {
    this.#floor.drop();
  }

  /** Jobs were inserted by a transaction that began at `startUs`: the next plain claim starts no later (see {@link ClaimFloor.since}). */
  lowerFloor(startUs: number): void {
    this.#floor.since(startUs);
  }

  /**
   * Claims up to `limit` jobs, of which the first `startNow` are charged their attempt at
   * once; from the claim floor, or with `fromStart` from the start of the ready index (a
   * one-off claim of what is due now, in claim order: runOnce).
   */
  async claim(limit: number, startNow: number, fromStart = false): Promise<ClaimedJob[]> {
    const sentAt = this.#clock.now();
    const { leasesByKind, leaseMs } = this.#settings;
    const kinds = this.#gate.claimable;
    if (kinds.length === 0) return [];
    const params: unknown[] = [limit, this.#workerId, leasesByKind, leaseMs, startNow, this.#queue, kinds];
    if (!fromStart && this.#floor.unset) await this.#hint();
    if (!fromStart && this.#floor.probeDue()) this.#sendProbe(kinds);
    const from = fromStart ? { ...this.#floor.start(), key: undefined } : this.#floor.start();
    if (from.key) params.push(from.key.priority, from.key.runAtUs, String(from.key.id), from.shared);
    const { rows } = await this.#driver.run<ClaimRow>(from.key ? this.#queries.claimFrom : this.#queries.claim, params);
    this.#floor.claimed(rows, from, sentAt, limit);
    const started: ClaimedJob[] = [];
    const reserved: ClaimedJob[] = [];
    for (const row of rows) {
      // A row that cannot be decoded fails alone (see takeError); the rest of the batch runs.
      const { job, error } = decodeClaimRow(row, this.#policyFor);
      if (error) this.#undecodable.set(job, error);
      if (row.started) started.push(job);
      else {
        this.#reserved.add(job);
        reserved.push(job);
      }
    }
    // Started jobs first: they are the ones with a slot waiting (see the producer's claim loop).
    const jobs = started.length === 0 ? reserved : started.concat(reserved);
    this.#local.claimed(jobs, sentAt);
    return jobs;
  }

  /** Resolves once the claim floor's probe, if one is out, has returned. */
  async probed(): Promise<void> {
    await this.#probe;
  }

  /** Reads where the queue's claims left off, for the first floor (see {@link ClaimFloor.hint}); on failure, claims from the start. */
  async #hint(): Promise<void> {
    const sentAt = this.#clock.now();
    try {
      const { rows } = await this.#driver.run<KeyRow>(this.#queries.floorHint, [this.#queue]);
      this.#floor.hint(rows[0] && keyOf(rows[0]), sentAt);
    } catch (error) {
      this.#floor.hint(undefined, sentAt);
      this.#emit({ type: "error", during: "claim", error });
    }
  }

  /** Sends the claim floor's probe; claims go on from the floor meanwhile (see claim-floor.ts). */
  #sendProbe(kinds: readonly string[]): void {
    const start = this.#floor.probing();
    const look = async (): Promise<{ rows: KeyRow[] }> => {
      await this.#driver.run(this.#queries.raiseReadyMark, [this.#queue, start.priority]);
      return this.#driver.run<KeyRow>(this.#queries.firstReady, [this.#queue, kinds, start.priority]);
    };
    this.#probe = look().then(
      ({ rows }) => {
        if (this.#floor.probed(rows[0] && keyOf(rows[0]), start)) this.#floorLowered();
      },
      (error: unknown) => {
        this.#floor.probed(undefined, start, true);
        this.#emit({ type: "error", during: "claim", error });
      },
    );
  }

  /** Claims up to `slots` keyed jobs (every job, in a queue with a limit), all started now (see keyed-claim.ts). */
  async claimKeyed(slots: number): Promise<ClaimedJob[]> {
    const sentAt = this.#clock.now();
    const { leasesByKind, leaseMs } = this.#settings;
    const claimed = await this.#keyed.claim(slots, this.#workerId, leasesByKind, leaseMs, this.#policyFor, this.#queue, this.#gate.claimable, this.#gate.limited);
    const jobs = claimed.map(({ job, error }) => {
      if (error) this.#undecodable.set(job, error);
      return job;
    });
    this.#local.claimed(jobs, sentAt);
    return jobs;
  }

  /** As a claimed job's handler starts: the error it fails with instead of running, if its row could not be decoded. */
  takeError(job: ClaimedJob): Error | undefined {
    const undecodable = this.#undecodable.get(job);
    this.#undecodable.delete(job);
    return undecodable;
  }

  /** Whether the claim only reserved the job (its start is still to be recorded once its handler starts). */
  isReserved(job: ClaimedJob): boolean {
    return this.#reserved.has(job);
  }

  /** As a claimed job's handler starts: whether the claim only reserved it (its start is still to be recorded). */
  takeReserved(job: ClaimedJob): boolean {
    return this.#reserved.delete(job);
  }

  /** Drops a claimed job that will not start here (given back, or no longer this worker's): its lease and its marks. */
  forget(job: ClaimedJob): void {
    this.#local.forget(job);
    this.#reserved.delete(job);
    this.#undecodable.delete(job);
  }
}
