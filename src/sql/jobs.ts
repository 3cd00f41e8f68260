import type { Statement } from "../driver/types.js";
import { cancelNotice, channelFor, memoisePerSchema, qualified, returnedNotice, statement, waitChannelFor } from "./statement.js";
import { workerStaleSeconds } from "./workers.js";

/** Every statement errand runs, for one schema. Built once per client. */
export interface Queries {
  readonly enqueue: Statement;
  readonly enqueuePlain: Statement;
  readonly enqueueAfter: Statement;
  readonly enqueuePlainAfter: Statement;
  readonly announceJobs: Statement;
  readonly findByDedupeKeys: Statement;
  readonly claim: Statement;
  readonly claimFrom: Statement;
  readonly raiseReadyMark: Statement;
  readonly firstReady: Statement;
  readonly floorHint: Statement;
  readonly start: Statement;
  readonly complete: Statement;
  readonly completeInTransaction: Statement;
  readonly checkpoint: Statement;
  readonly completeWithValues: Statement;
  readonly progress: Statement;
  readonly fail: Statement;
  readonly failTimedOut: Statement;
  readonly release: Statement;
  readonly deadLetter: Statement;
  readonly heartbeat: Statement;
  readonly rescue: Statement;
  readonly getJob: Statement;
  readonly listDead: Statement;
  readonly retryDead: Statement;
  readonly discardDead: Statement;
  readonly cancel: Statement;
}

/** The statements for `schema` (memoised). */
export const queriesFor = memoisePerSchema((schema): Queries => build(qualified(schema), channelFor(schema), waitChannelFor(schema)));

/** Columns returned for a job everywhere a whole job is returned. */
const jobColumns = `j.id, j.kind, j.payload, j.status, j.priority, j.attempts, j.max_attempts, j.run_at,
  j.locked_until, j.locked_by, j.last_error, j.errors, j.retry, j.dedupe_key, j.created_at, j.started_at, j.finished_at,
  j.checkpoint::text AS checkpoint, j.result, j.progress, j.batch_id, j.queue`;

/**
 * The enqueue statements' input rows: $1 is a JSON array of jobs, one object per job
 * keyed by column — see EncodedJobs in src/enqueue.ts, which writes them. The record
 * definition names and types each field once; absent fields are null (a JSON null
 * payload too, hence the coalesce). Columns: ord (input order), kind, payload, run_at
 * (the given time, else now() + delay_ms), max_attempts, priority, dedupe_key, retry, timeout_ms,
 * queue (absent = 'default'), concurrency_key and, for enqueue (`dedupe`), dedupe_mode and dedupe_until
 * (now() + dedupe_ttl_ms; see src/dedupe.ts): enqueuePlain and batches, whose jobs carry no key, read neither.
 */
export function jobInput(dedupe: boolean): string {
  return `(SELECT t.ord, t.kind, coalesce(t.payload, 'null') AS payload,
               coalesce(t.run_at, now() + coalesce(t.delay_ms, 0) * interval '1 millisecond') AS run_at,
               t.max_attempts, t.priority, t.dedupe_key, t.retry, t.timeout_ms, coalesce(t.queue, 'default') AS queue, t.concurrency_key${dedupe ? ",\n               t.dedupe_mode, now() + t.dedupe_ttl_ms * interval '1 millisecond' AS dedupe_until" : ""}
        FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (kind text, payload jsonb, run_at timestamptz, delay_ms float8,
                                                         max_attempts int, priority int, dedupe_key text, retry jsonb, timeout_ms int, queue text,
                                                         concurrency_key text${dedupe ? ", dedupe_mode text, dedupe_ttl_ms float8" : ""}))
             WITH ORDINALITY AS t(kind, payload, run_at, delay_ms, max_attempts, priority, dedupe_key, retry, timeout_ms, queue, concurrency_key,${dedupe ? " dedupe_mode, dedupe_ttl_ms," : ""} ord))`;
}

/**
 * The attempt a held row is on. A claim charges an attempt only to the rows whose handlers
 * start at once; the rest of the batch is *reserved* for the worker's buffer (`running`,
 * leased, `started_at` NULL, attempts not yet incremented) and is charged when its handler
 * starts (the `start` statement) or, if the outcome gets there first, by the outcome's
 * write. Every statement on a held row matches and writes this value.
 */
const heldAttempt = "(j.attempts + (j.started_at IS NULL)::int)";

/**
 * `errors` with `entry` (a jsonb object) appended, the last 25 kept. A history that is not
 * an array (written by hand, or before migration 007's check) starts over instead of
 * failing the statement for every row in it.
 */
function appendError(entry: string): string {
  return `(CASE WHEN jsonb_typeof(j.errors) IS DISTINCT FROM 'array' THEN '[]'::jsonb
                WHEN jsonb_array_length(j.errors) >= 25 THEN j.errors - 0 ELSE j.errors END)
               || jsonb_build_array(${entry})`;
}

/**
 * Whether job `j` still holds its dedupe key, by the mode it was enqueued with (see
 * migration 012): NULL ('retained', and rows written by plain SQL) while the row exists,
 * 'queued' and 'replace' while ready, 'active' while ready or running, 'ttl' until
 * dedupe_until. An unknown mode (a hand edit) holds, as before modes existed.
 */
function holdsKey(j: string): string {
  return `(CASE ${j}.dedupe_mode WHEN 'queued' THEN ${j}.status = 'ready' WHEN 'replace' THEN ${j}.status = 'ready'
                WHEN 'active' THEN ${j}.status IN ('ready', 'running')
                WHEN 'ttl' THEN ${j}.dedupe_until IS NULL OR ${j}.dedupe_until > now() ELSE true END)`;
}

/** Times a rescuer may return a reserved row whose lease expired before it is charged anyway. */
export const maxUnstartedRefunds = 3;

/** How far below now() a claim's floor may reach: see claimFrom. */
export const claimFloorSlackMs = 100;

/**
 * The claim's filter: ready, due, plain (no concurrency key) jobs of queue $`queue` whose kind
 * is one of $`kinds`. `outcome IS NULL` (implied by `status = 'ready'`, see migration 020)
 * lets the planner read jobs_open_plain, whose predicate names no column a claim changes.
 */
const claimableBy = (queue: number, kinds: number): string =>
  `status = 'ready' AND outcome IS NULL AND queue = $${queue}::text AND concurrency_key IS NULL AND run_at <= now() AND kind = ANY($${kinds}::text[])`;
/** The claim statements' filter: their queue is $6, their kinds $7. */
const claimable = claimableBy(6, 7);
/** A claim key's columns (see KeyRow in src/worker/claim-floor.ts), of the row named `row`: run_at in epoch milliseconds. */
const keyColumns = (row: string): string => `${row}.id, ${row}.priority, (extract(epoch FROM ${row}.run_at) * 1000)::float8 AS run_at_ms`;
/** claimFrom's floor ($9: epoch microseconds, exact in a float8) and the slack's limit. */
const floorAt = "(timestamptz 'epoch' + $9::float8 * interval '1 microsecond')";
const slackAt = `(now() - interval '${claimFloorSlackMs} milliseconds')`;

/**
 * The claim's update of the rows that `next` selects (their ctids, locked, in claim order);
 * see claim. It records the batch in `leases` (migration 021: where the rescuer finds it),
 * whose id each row carries as `lease`.
 */
function claimUpdate(s: string, next: string): string {
  /** The first $5 rows of the claim's batch, in claim order: their handlers start now. */
  const startsNow = "j.ctid = ANY(ARRAY(SELECT ctid FROM next LIMIT $5))";
  return `
      WITH next AS (${next}
      ), claimed AS (
      UPDATE ${s}.jobs j
      SET status = 'running',
          attempts = j.attempts + CASE WHEN ${startsNow} THEN 1 ELSE 0 END,
          locked_by = $2,
          locked_until = now() + coalesce(($3::jsonb ->> j.kind)::float8, $4::float8) * interval '1 millisecond',
          started_at = CASE WHEN ${startsNow} THEN now() END
      WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM next))
      RETURNING ${keyColumns("j")}, j.kind, j.payload, j.attempts, j.started_at IS NOT NULL AS started, j.max_attempts, j.retry::text AS retry, j.timeout_ms,
                (extract(epoch FROM j.created_at) * 1000)::float8 AS created_at_ms,
                j.checkpoint::text AS checkpoint, j.locked_until, j.run_at
      ), lease AS (${recordLease(s, "$2", "claimed", true)})
      SELECT c.id, c.priority, c.run_at_ms, c.kind, c.payload, c.attempts, c.started, c.max_attempts, c.retry, c.timeout_ms, c.created_at_ms, c.checkpoint,
             (SELECT id FROM lease) AS lease
      FROM claimed c`;
}

/**
 * An INSERT of one lease record (migration 021) for worker `worker` (a parameter) holding
 * the rows of CTE `rows` (id, locked_until): their ids, and the earliest of their leases.
 * No record when there is no row. Returns its id. `claim`: a plain claim's record, which
 * also names its queue ($6), the kinds it could take ($7) and the key of its last row in
 * claim order (`rows` has priority and run_at too), where the other workers of that queue
 * and kinds start their next claim (migration 022, see claimFrom).
 */
function recordLease(s: string, worker: string, rows: string, claim = false): string {
  // The last row in claim order (priority descending, then run_at, then id), column by
  // column: each a linear read of the batch, no sort.
  const priority = `(SELECT min(r.priority) FROM ${rows} r)`;
  const runAt = `(SELECT max(r.run_at) FROM ${rows} r WHERE r.priority = ${priority})`;
  const id = `(SELECT max(r.id) FROM ${rows} r WHERE r.priority = ${priority} AND r.run_at = ${runAt})`;
  const [columns, values] = claim ? [", queue, kinds, last_priority, last_run_at, last_id", `, $6::text, $7::text[], ${priority}, ${runAt}, ${id}`] : ["", ""];
  return `
        INSERT INTO ${s}.leases (worker, locked_until, ids${columns})
        SELECT ${worker}, min(r.locked_until), array_agg(r.id)${values} FROM ${rows} r WHERE r.locked_until IS NOT NULL HAVING count(*) > 0
        RETURNING id`;
}

/** How many of the newest lease records a claim from a floor looks through for where the other workers' claims left off (see claimFrom). */
const sharedFloorRecords = 16;

function build(s: string, channel: string, waitChannel: string): Queries {
  const jobs = `${s}.jobs`;
  /** fail's per-job values: $2 is {id: [attempt, delay_ms, permanent, error]} (see byId). */
  const failed = (index: number, cast: string): string => `($2::jsonb -> j.id::text ->> ${index})${cast}`;
  const [attempt, delayMs, permanent, error] = [failed(0, "::int"), failed(1, "::float8"), failed(2, "::boolean"), failed(3, "")];
  /** fail's update (see fail and failTimedOut). */
  const failUpdate = `UPDATE ${jobs} j
      SET status = CASE WHEN ${permanent} OR ${attempt} >= j.max_attempts THEN 'dead' ELSE 'ready' END,
          attempts = ${attempt},
          started_at = coalesce(j.started_at, now()),
          run_at = CASE WHEN ${permanent} OR ${attempt} >= j.max_attempts THEN j.run_at
                        ELSE now() + ${delayMs} * interval '1 millisecond' END,
          finished_at = CASE WHEN ${permanent} OR ${attempt} >= j.max_attempts THEN now() END,
          last_error = ${error},
          errors = ${appendError(`jsonb_build_object('attempt', ${attempt}, 'at', now(), 'error', ${error})`)},
          locked_until = NULL, locked_by = NULL
      WHERE j.id = ANY($1::bigint[]) AND ${heldAttempt} = ${attempt}
        AND j.status = 'running' AND j.locked_by = $3 AND ${countsBatches}`;
  /** The enqueue statement's text; `after`: errand sends the notices after the commit (see insertNotice). */
  const enqueueText = (after: boolean): string => `
      WITH input AS (
        SELECT nextval((SELECT pg_get_serial_sequence('${jobs}', 'id')::regclass)) AS id, j.*
        FROM ${jobInput(true)} AS j
      ), plain AS (
        INSERT INTO ${jobs} (id, kind, payload, run_at, max_attempts, priority, retry, timeout_ms, queue, concurrency_key)
        SELECT id, kind, payload, run_at, max_attempts, priority, retry, timeout_ms, queue, concurrency_key
        FROM input WHERE dedupe_key IS NULL ORDER BY ord
        RETURNING run_at
      ), keys AS MATERIALIZED (
        SELECT j.ctid, j.id, j.dedupe_key, ${holdsKey("j")} AS holds FROM ${jobs} j
        WHERE j.dedupe_key = ANY(ARRAY(SELECT dedupe_key FROM input WHERE dedupe_key IS NOT NULL))
      ), released AS (
        UPDATE ${jobs} j SET dedupe_key = NULL
        WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM keys WHERE NOT holds))
          AND j.dedupe_key = (SELECT jsonb_object_agg(id, dedupe_key) FROM keys WHERE NOT holds) ->> j.id::text AND NOT ${holdsKey("j")}
        RETURNING j.id
      ), replacing AS (
        SELECT dedupe_key, min(id) AS id, max(ord) AS last FROM input
        WHERE dedupe_mode = 'replace' AND (SELECT count(*) FROM released) >= 0
        GROUP BY dedupe_key
      ), inserted AS (
        INSERT INTO ${jobs} (id, kind, payload, run_at, max_attempts, priority, dedupe_key, retry, timeout_ms, dedupe_mode, dedupe_until, queue, concurrency_key)
        SELECT id, kind, payload, run_at, max_attempts, priority, dedupe_key, retry, timeout_ms, dedupe_mode, dedupe_until, queue, concurrency_key
        FROM input WHERE dedupe_key IS NOT NULL AND (SELECT count(*) FROM released) >= 0
          AND dedupe_key NOT IN (SELECT dedupe_key FROM replacing WHERE dedupe_key IS NOT NULL) ORDER BY ord
        ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING id, dedupe_key, run_at
      ), replaced AS (
        INSERT INTO ${jobs} AS j (id, kind, payload, run_at, max_attempts, priority, dedupe_key, retry, timeout_ms, dedupe_mode, dedupe_until, queue, concurrency_key)
        SELECT r.id, i.kind, i.payload, i.run_at, i.max_attempts, i.priority, i.dedupe_key, i.retry, i.timeout_ms, i.dedupe_mode, i.dedupe_until, i.queue, i.concurrency_key
        FROM replacing r JOIN input i ON i.ord = r.last ORDER BY r.id
        ON CONFLICT (dedupe_key) DO UPDATE
        SET kind = excluded.kind, payload = excluded.payload, run_at = excluded.run_at, max_attempts = excluded.max_attempts,
            priority = excluded.priority, retry = excluded.retry, timeout_ms = excluded.timeout_ms,
            dedupe_mode = excluded.dedupe_mode, dedupe_until = excluded.dedupe_until, queue = excluded.queue,
            concurrency_key = excluded.concurrency_key
        WHERE j.status = 'ready'
        RETURNING j.id, j.dedupe_key, j.run_at
      ), written AS (
        SELECT id, dedupe_key FROM inserted UNION ALL SELECT id, dedupe_key FROM replaced
      )
      SELECT array_agg(CASE WHEN input.dedupe_key IS NULL THEN input.id
                            ELSE coalesce(w.id, h.id) END
                       ORDER BY input.ord) AS ids,
             array_agg(input.dedupe_key IS NOT NULL AND w.id IS DISTINCT FROM input.id ORDER BY input.ord) AS duplicates,
             array_agg(input.dedupe_mode IS NOT DISTINCT FROM 'replace' AND w.id <> input.id ORDER BY input.ord) AS replaced,
             ${insertNotice(s, channel, "SELECT run_at FROM plain UNION ALL SELECT run_at FROM inserted UNION ALL SELECT run_at FROM replaced", after)}
      FROM input LEFT JOIN written w ON w.dedupe_key = input.dedupe_key
      LEFT JOIN keys h ON h.dedupe_key = input.dedupe_key AND h.holds
`;
  /** The enqueuePlain statement's text; `after` as enqueueText's. */
  const enqueuePlainText = (after: boolean): string => `
      WITH inserted AS (
        INSERT INTO ${jobs} (kind, payload, run_at, max_attempts, priority, retry, timeout_ms, queue, concurrency_key)
        SELECT kind, payload, run_at, max_attempts, priority, retry, timeout_ms, queue, concurrency_key
        FROM ${jobInput(false)} AS input
        RETURNING id, run_at
      )
      SELECT array_agg(id ORDER BY id) AS ids, ${insertNotice(s, channel, "SELECT run_at FROM inserted", after)} FROM inserted
`;
  return {
    /*
     * enqueue — inserts n jobs in one statement. Ids are drawn first so each input row
     * can be matched to its job. Rows without a dedupe key (they cannot conflict) go in
     * by a plain INSERT: ON CONFLICT makes every row a speculative insertion, ~10 % of a
     * bulk enqueue. For the keyed rows:
     * - keys: the jobs that carry the batch's keys (one probe of the unique index per
     *   key), and whether each still holds its key (its mode's states or ttl, see holdsKey).
     * - released: the ones that no longer hold it give it up (dedupe_key = NULL), found by
     *   ctid and checked again on their latest version: still not holding, and still with
     *   the key keys saw, looked up by id in one object (`= ANY(ARRAY(…))` compared every
     *   released row with every released key: 2.0–2.4 s to enqueue again 10,000 keys whose
     *   jobs had finished). This is the only place a key is released: the workers'
     *   statements never touch it.
     * - inserted: ON CONFLICT (dedupe_key) DO NOTHING: a key still held is a duplicate, and
     *   a key twice in the batch makes one job, the first row's. It reads released first
     *   (the count), so that it sees the keys given up.
     * - replaced: a key with 'replace' rows makes one row: the first one's id with the last
     *   one's payload and options (the latest wins). ON CONFLICT DO UPDATE the holder with
     *   them while it is ready (not yet claimed); a running holder is left alone. Rows of
     *   other modes with that key in the batch are its duplicates: inserted leaves out the
     *   replaced keys through a hashed NOT IN (`<> ALL(ARRAY(…))` compared every keyed row
     *   with every replaced key: 1.9–2.5 s for 10,000 jobs in 'replace' mode, 0.45–0.59 s
     *   now).
     * A duplicate returns the holder's id when this snapshot sees it holding the key (from
     * keys; else null: the caller looks it up again, see findByDedupeKeys). The sequence is looked up
     * once per statement. The jobs arrive as one JSON array (one value to send and to
     * parse; payloads stay jsonb, not re-parsed from text):
     * $1 a JSON array of jobs (see jobInput)
     * one row: ids (in input order; null where a duplicate's job was not visible), duplicates,
     * replaced (one row of arrays: 1,000 rows cost the client more to read than the insert);
     * jobs written with a run_at in the past are announced (see insertNotice)
     */
    enqueue: statement(enqueueText(false)),
    enqueueAfter: statement(enqueueText(true)),

    /*
     * enqueuePlain — enqueue for a batch with no dedupe key (the common case): nothing can
     * conflict, so no drawn ids, no second pass. The identity assigns ids as rows arrive
     * from the single function scan, i.e. in input order, so the ids sorted are the jobs
     * in input order even when other sessions draw ids in between.
     * $1 as enqueue's (dedupe_key always null); one row: ids. Announces jobs with a run_at
     * in the past as enqueue does.
     */
    enqueuePlain: statement(enqueuePlainText(false)),
    enqueuePlainAfter: statement(enqueuePlainText(true)),

    /*
     * announceJobs — $1 text[]: notices that enqueues on errand's own connection returned
     * (see insertNotice; the earliest time of those pending, and the keyed notice if any),
     * sent once their inserts have committed: a transaction that only notifies does not wait
     * for a WAL flush (migration 023). one row: sent
     */
    announceJobs: statement(`SELECT count(pg_notify('${channel}', n)) AS sent FROM unnest($1::text[]) AS n`),

    /* findByDedupeKeys — $1 text[]; rows: id, dedupe_key */
    findByDedupeKeys: statement(`SELECT id, dedupe_key FROM ${jobs} WHERE dedupe_key = ANY($1::text[])`),

    /*
     * claim — takes up to $1 ready, due jobs of queue $6 whose kind is one of $7 (the
     * kinds this worker has handlers for and are not paused: it never takes a job it
     * cannot run) and without a concurrency key (keyed jobs go through claim_keyed,
     * migration 016, which enforces their limits) in priority then run_at order, skipping rows
     * other workers hold, and leases them to worker $2 for $4 ms (or the kind's lease in
     * $3, a JSON object kind → ms). The first $5 of them (the worker's free handler slots)
     * start now: attempts + 1, started_at = now(). The others are reserved for the
     * worker's buffer: leased, started_at NULL, no attempt spent until a handler starts
     * (see heldAttempt). Commits on its own: no transaction stays open.
     * The locked rows are updated by their ctid (a TID scan: they cannot move while this
     * statement holds their locks), not by joining on id, whose plan depended on the
     * table's statistics (a hash of the whole table per claim when it was small).
     * rows: id, kind, payload, attempts, started, max_attempts, retry (as text: decoded
     * per job by the worker), timeout_ms (null: the kind's), priority, run_at_ms, created_at_ms (epoch milliseconds: a float is
     * cheaper to send and to read than a timestamptz), checkpoint (as text, NULL for a job
     * that never saved one: a NULL costs the reply four bytes and the worker nothing),
     * lease (the id of the batch's lease record: see claimUpdate)
     */
    claim: statement(claimUpdate(s, `
        SELECT ctid FROM ${jobs}
        WHERE ${claimable}
        ORDER BY priority DESC, run_at, id
        LIMIT $1
        FOR UPDATE SKIP LOCKED`)),

    /*
     * claimFrom — claim, scanning the ready index from a floor instead of its start: the
     * key ($8 priority, $9 run_at in epoch microseconds, $10 id) of the last job this
     * worker claimed. Without VACUUM every job that left 'ready' leaves a dead entry in
     * jobs_ready_plain, and as the oldest keys they sit at the front of the queue's range:
     * a claim from the start reads them all (2,000,000 of them: 12,000 buffers, 43 ms),
     * from the floor a handful (see src/worker/claim-floor.ts, which says when firstReady
     * looks below the floor, bounding how long a job that became ready there waits).
     * With $11 true the claim starts instead where the newest plain claim of the same queue,
     * the same kinds and this priority left off, of those that left off beyond the floor
     * (its lease record, migration 022; `start`): every job before it that those kinds can take was
     * claimed by that claim or held by another, so this claim does not read again what the
     * other workers claimed since its own last claim. The worker sends $11 false after its
     * floor was lowered (see ClaimFloor.sharing), and a job left behind there is found by
     * the probe as a job below the floor is.
     * The start is lowered to now() - ${claimFloorSlackMs} ms when it is later than that: a job's
     * run_at is its enqueue transaction's start, so jobs committed just after this
     * statement's snapshot by transactions shorter than that still lie above it.
     * Three index range scans in claim order: higher priorities (normally none), the
     * floor's priority from the floor on, lower priorities. Each is a subquery with its own
     * ORDER BY and row locks, so none is merged into one scan, and UNION ALL runs them one
     * after another (Append: no parallel plan for a statement that locks rows), the LIMIT
     * stopping the first that fills the batch: no row is locked that is not claimed. Each
     * range has the batch's LIMIT too, which changes no result but tells the planner that
     * only the first rows are read: costed whole, on half-empty pages (migration 021's
     * fillfactor), the generic plan read the other two ranges as a bitmap and a sort.
     * Same parameters $1-$7 and rows as claim.
     */
    claimFrom: statement(claimUpdate(s, `
        WITH shared AS (
          SELECT r.last_run_at AS at, r.last_id AS id
          FROM (SELECT id, queue, kinds, last_priority, last_run_at, last_id FROM ${s}.leases ORDER BY id DESC LIMIT ${sharedFloorRecords}) AS r
          WHERE $11::boolean AND r.queue = $6::text AND r.last_priority = $8::int AND r.kinds @> $7::text[] AND r.kinds <@ $7::text[]
            AND (r.last_run_at, r.last_id) > (${floorAt}, $10::bigint)
          ORDER BY r.id DESC LIMIT 1
        ), start AS (
          SELECT CASE WHEN f.at < ${slackAt} THEN f.at ELSE ${slackAt} END AS at, CASE WHEN f.at < ${slackAt} THEN f.id ELSE 0 END AS id
          FROM (SELECT coalesce((SELECT at FROM shared), ${floorAt}) AS at, coalesce((SELECT id FROM shared), $10::bigint) AS id) AS f
        )
        SELECT ctid FROM (SELECT ctid FROM ${jobs} WHERE ${claimable} AND priority > $8::int
                          ORDER BY priority DESC, run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) AS higher
        UNION ALL
        SELECT ctid FROM (SELECT ctid FROM ${jobs} WHERE ${claimable} AND priority = $8::int
                            AND (run_at, id) >= ((SELECT at FROM start), (SELECT id FROM start))
                          ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) AS floor
        UNION ALL
        SELECT ctid FROM (SELECT ctid FROM ${jobs} WHERE ${claimable} AND priority < $8::int
                          ORDER BY priority DESC, run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) AS lower
        LIMIT $1`)),

    /*
     * raiseReadyMark — raises the ready mark of queue $1 and priority $2 (migration 028),
     * below which no job of them is ready, when it can without waiting: sent before each
     * firstReady. Writes one row of ready_marks, without waiting for its WAL flush.
     */
    raiseReadyMark: statement(`SELECT ${s}.raise_ready_mark($1::text, $2::int)`),

    /*
     * firstReady — the claim floor's probe (see src/worker/claim-floor.ts): the key of the
     * first job a claim from the start would take, of queue $1 and kinds $2, or no row.
     * Reads the ready index as such a claim does, but the range of priority $3 (the
     * floor's) from its ready mark (raiseReadyMark), not through the dead entries in front
     * of it; the others from their start, as claimFrom. Locks and writes nothing, and no
     * claim waits for it. A row another claim holds counts: the claim after it skips what
     * is still locked. rows: id, priority, run_at_ms
     */
    firstReady: statement(`
      SELECT id, priority, run_at_ms FROM (
        (SELECT ${keyColumns("j")} FROM ${jobs} j WHERE ${claimableBy(1, 2)} AND priority > $3::int
         ORDER BY priority DESC, run_at, id LIMIT 1)
        UNION ALL
        (SELECT ${keyColumns("j")} FROM ${jobs} j WHERE ${claimableBy(1, 2)} AND priority = $3::int
           AND run_at >= coalesce(${s}.ready_mark($1::text, $3::int), '-infinity')
         ORDER BY run_at, id LIMIT 1)
        UNION ALL
        (SELECT ${keyColumns("j")} FROM ${jobs} j WHERE ${claimableBy(1, 2)} AND priority < $3::int
         ORDER BY priority DESC, run_at, id LIMIT 1)
      ) AS first LIMIT 1`),

    /*
     * floorHint — where the claims of queue $1 left off: the key of its job that finished
     * last, among the last 1,000 jobs moved to done_jobs (its finished_at index, read
     * backwards: a queue that finished none of them gets no hint, and claims from the
     * start). A restarted producer's first floor. rows: id, priority, run_at_ms
     */
    floorHint: statement(`
      SELECT ${keyColumns("recent")}
      FROM (SELECT priority, run_at, id, queue, finished_at FROM ${s}.done_jobs ORDER BY finished_at DESC LIMIT 1000) AS recent
      WHERE queue = $1::text
      ORDER BY finished_at DESC
      LIMIT 1`),

    /*
     * start — records that the handlers of reserved jobs started: the attempt is spent.
     * Sent lazily with the next batch of outcomes, and only for jobs whose outcome is not
     * known yet (the outcome's write charges the others). Writes no indexed column, so
     * PostgreSQL can update the row in place (HOT).
     * $1 id bigint[], $2 {id: attempt} (JSON, see byId), $3 worker id; rows: id
     */
    start: statement(`
      UPDATE ${jobs} j
      SET attempts = j.attempts + 1, started_at = now()
      WHERE j.id = ANY($1::bigint[]) AND j.started_at IS NULL AND j.attempts + 1 = ($2::jsonb ->> j.id::text)::int
        AND j.status = 'running' AND j.locked_by = $3
      RETURNING j.id`),

    /*
     * complete — marks jobs done, but only those still leased to this worker for this
     * attempt: a late result after the lease was lost is not recorded. A reserved row
     * (its start not written yet) is charged its attempt here.
     * Counts the outcomes for stats (see counted()) and announces them (see waitNotice).
     * $1 id bigint[], $2 {id: attempt} (JSON, see byId), $3 worker id; rows: id
     */
    complete: statement(completeMany(s, waitChannel, false)),

    /*
     * completeWithValues — complete for a batch in which some handler returned a result or
     * has progress not yet written: the result is stored with the job in the same write
     * (never half of it), the progress if given. Batches without either use complete,
     * which does not carry the extra values.
     * $1 id bigint[], $2 {id: {a: attempt, r?: result, p?: progress}} (JSON, see
     * byIdJson), $3 worker id; rows: id
     */
    completeWithValues: statement(completeMany(s, waitChannel, true)),

    /*
     * progress — writes the progress handlers reported (the progress writer, at most once
     * per job per interval) and announces it to waitFor's onProgress. Only rows still
     * leased to this worker for this attempt. Writes no indexed column (HOT).
     * $1 id bigint[], $2 {id: {a: attempt, p: progress}} (JSON, see byIdJson), $3 worker id;
     * rows: id, notified
     */
    progress: statement(`
      WITH changed AS (
        UPDATE ${jobs} j
        SET progress = $2::jsonb -> j.id::text -> 'p'
        WHERE j.id = ANY($1::bigint[]) AND ${heldAttempt} = ($2::jsonb -> j.id::text ->> 'a')::int
          AND j.status = 'running' AND j.locked_by = $3
        RETURNING j.id
      )
      SELECT id, ${waitNotice(waitChannel, "p", "")} FROM changed`),

    /*
     * completeInTransaction — complete for one job, run by a handler on its own
     * transaction (ctx.complete(tx)): the job is done if and only if that transaction
     * commits. The same guard as complete (this worker's lease, this attempt, running), so
     * a handler whose lease was lost gets no row back and its transaction is rolled back.
     * Counted for stats like complete: the counter rows stay locked until the caller
     * commits, which is why it should be the transaction's last statement.
     * $1 id, $2 attempt, $3 worker id; rows: id
     */
    completeInTransaction: statement(
      completion(s, waitChannel, "ARRAY[$1::bigint]", `${heldAttempt} = $2::int AND j.status = 'running' AND j.locked_by = $3::text`, "j.result", "j.progress"),
    ),

    /*
     * checkpoint — saves a running job's checkpoint (ctx.checkpoint(state)) for its next
     * attempt, if the job is still leased to this worker for this attempt: a handler that
     * lost its lease cannot overwrite the progress of the one that took over. Kept when
     * the job finishes (see migration 009).
     * $1 id, $2 attempt, $3 worker id, $4 the state as JSON text; rows: id
     */
    checkpoint: statement(`
      UPDATE ${jobs} j SET checkpoint = $4::text::jsonb
      WHERE j.id = $1::bigint AND ${heldAttempt} = $2::int AND j.status = 'running' AND j.locked_by = $3::text
      RETURNING j.id`),

    /*
     * fail — records failed attempts: back to ready after the given delay, or dead when
     * the error is permanent or attempts are used up. Keeps last_error and appends to the
     * errors history (the last 25 kept). A reserved row is charged its attempt here.
     * $1 id bigint[], $2 {id: [attempt, delay_ms, permanent, error]} (JSON, see byId),
     * $3 worker id; rows: id, status
     */
    fail: statement(counted(s, waitChannel, "", failUpdate, "id, status", "failure")),

    /*
     * failTimedOut — fail for attempts that ran past their maximum run time: the same
     * update, also counted as timeouts for stats. Same parameters and rows as fail.
     */
    failTimedOut: statement(counted(s, waitChannel, "", failUpdate, "id, status", "timeout")),

    /*
     * release — gives jobs back without spending an attempt (shutdown, a buffered job
     * that waited too long or never started, a snooze): a started row's attempt is
     * refunded, a reserved row was never charged. Wakes the workers when a job is due
     * again at once (returnedNotice: it is below their claim floors). $1 id bigint[], $2 {id: [attempt, delay_ms]} (JSON, see byId; a delay
     * of 0 keeps run_at), $3 worker id; rows: id
     */
    release: statement(`
      WITH released AS (
        UPDATE ${jobs} j
        SET status = 'ready', attempts = j.attempts - (j.started_at IS NOT NULL)::int, locked_until = NULL, locked_by = NULL,
            run_at = CASE WHEN ($2::jsonb -> j.id::text ->> 1)::float8 > 0
                          THEN now() + ($2::jsonb -> j.id::text ->> 1)::float8 * interval '1 millisecond' ELSE j.run_at END
        WHERE j.id = ANY($1::bigint[]) AND ${heldAttempt} = ($2::jsonb -> j.id::text ->> 0)::int
          AND j.status = 'running' AND j.locked_by = $3
        RETURNING j.id, j.run_at <= now() AS due
      )
      SELECT id, CASE WHEN due THEN pg_notify('${channel}', '${returnedNotice}') END IS NULL AS notified FROM released`),

    /*
     * deadLetter — the last resort for one job whose outcome cannot be written (the
     * write fails on something in the row itself): buries it with the reason, touching
     * nothing else of the row, so it cannot hold up the outcomes of other jobs.
     * $1 id, $2 attempt, $3 worker id, $4 reason; rows: id
     */
    deadLetter: statement(
      counted(
        s,
        waitChannel,
        "",
        `UPDATE ${jobs} j
      SET status = 'dead', attempts = ${heldAttempt}, started_at = coalesce(j.started_at, now()), finished_at = now(),
          last_error = $4, locked_until = NULL, locked_by = NULL
      WHERE j.id = $1::bigint AND ${heldAttempt} = $2::int AND j.status = 'running' AND j.locked_by = $3 AND ${countsBatches}`,
        "id",
        "failure",
      ),
    ),

    /*
     * heartbeat — extends the leases of this worker's jobs; a job missing from the result
     * was lost (rescued, retried elsewhere or deleted) and its handler must stop. Reserved
     * rows are held like started ones. A job cancelled while this worker held it (see
     * cancel) comes back once with cancelled = true, and lets go of its worker.
     * $1 id bigint[], $2 {id: attempt} (JSON, see byId), $3 worker id, $4 kind → lease
     * ms (JSON), $5 default lease ms, $6 the ids of this worker's lease records it replaces
     * (migration 021: its claims' and its last heartbeat's, which it heard back from) with one
     * record of the leases it extends; rows: id, attempts, cancelled, lease (the new record's id)
     */
    heartbeat: statement(`
      WITH beat AS (
        UPDATE ${jobs} j
        SET locked_until = CASE WHEN j.status = 'running'
                                THEN now() + coalesce(($4::jsonb ->> j.kind)::float8, $5::float8) * interval '1 millisecond' END,
            locked_by = CASE WHEN j.status = 'running' THEN j.locked_by END
        WHERE j.id = ANY($1::bigint[]) AND ${heldAttempt} = ($2::jsonb ->> j.id::text)::int
          AND j.status IN ('running', 'cancelled') AND j.locked_by = $3
        RETURNING j.id, ${heldAttempt} AS attempts, j.status = 'cancelled' AS cancelled, j.locked_until
      ), replaced AS (
        DELETE FROM ${s}.leases WHERE id = ANY($6::bigint[]) AND worker = $3
      ), lease AS (${recordLease(s, "$3", "beat")})
      SELECT id, attempts, cancelled, (SELECT id FROM lease) AS lease FROM beat`),

    /*
     * rescue — returns up to $1 jobs whose lease expired (their worker died or overran)
     * to ready, or buries them as dead when that was their last attempt, so a job that
     * kills its worker every time cannot loop forever. The attempt is not refunded.
     * A reserved row (started_at NULL: buffered, its handler never started, as far as the
     * database knows) comes back without spending an attempt, recorded in its history as
     * `started: false`. Its start is written lazily, so a handler that kills its worker
     * before the start is written would look unstarted every time: after
     * maxUnstartedRefunds such entries an expired reservation is charged like any other.
     * A running row without a lease (written before migration 007's check) counts as
     * expired.
     * Where: the lease records (migration 021) due now, up to $2 of them, are taken (deleted);
     * among their ids, the jobs still running whose own lease ran out are rescued, and those
     * still running with a later lease (extended by a heartbeat since, or a batch whose leases
     * differ by kind), or held by another statement now, are recorded again. With $3 (true
     * now and then: see src/maintenance/rescuer.ts) every running job not finished is looked
     * at too: the jobs claimed by workers that keep no records (the seed's claim in plain SQL,
     * or errand before 021), which are recorded that way while their lease lasts. It reads
     * them through the two open indexes, plain and keyed, one subquery each: asked for
     * `outcome IS NULL` alone, which neither index's predicate covers, the planner read the
     * whole table (a 10,000,000-row history: 380,000 pages, 770 ms per sweep).
     * Early release (migration 031): a worker whose row allows it and has not been written for
     * ${workerStaleSeconds} s (stale, locked here so that its writes wait for this statement) has its
     * reserved jobs (started_at NULL) returned before their lease ends, found through its lease
     * records (taken too, and recorded again as kept); its row's started_at moves to now, so
     * that its next write, should it be alive, finds the row born again and gives back what it
     * had reserved (src/worker/presence.ts: it starts none once its row may be that old). The
     * row stays stale: a later run returns what this one's limit left.
     * rows: id, status
     */
    rescue: statement(
      counted(
        s,
        waitChannel,
        `stale AS MATERIALIZED (
        SELECT w.id FROM ${s}.workers w WHERE w.early_release AND w.seen_at < now() - interval '${workerStaleSeconds} seconds'
        FOR UPDATE SKIP LOCKED
      ), due AS (
        DELETE FROM ${s}.leases l
        WHERE l.id = ANY(ARRAY(SELECT id FROM ${s}.leases WHERE locked_until < now() ORDER BY locked_until LIMIT $2 FOR UPDATE SKIP LOCKED)
                         || ARRAY(SELECT id FROM ${s}.leases WHERE EXISTS (SELECT FROM stale) AND worker = ANY(ARRAY(SELECT id FROM stale))))
        RETURNING l.ids
      ), candidates AS (
        SELECT unnest(ids) AS id FROM due
        UNION
        SELECT id FROM ${jobs} WHERE $3::boolean AND outcome IS NULL AND concurrency_key IS NULL AND status = 'running'
        UNION
        SELECT id FROM ${jobs} WHERE $3::boolean AND outcome IS NULL AND concurrency_key IS NOT NULL AND status = 'running'
      ), expired AS (
        SELECT id FROM ${jobs}
        WHERE id IN (SELECT id FROM candidates) AND status = 'running'
          AND (locked_until IS NULL OR locked_until < now() OR (started_at IS NULL AND locked_by = ANY(ARRAY(SELECT id FROM stale))))
        ORDER BY locked_until NULLS FIRST
        LIMIT $1
        FOR UPDATE SKIP LOCKED
      ), kept AS (
        INSERT INTO ${s}.leases (worker, locked_until, ids)
        SELECT coalesce(j.locked_by, '?'), min(j.locked_until), array_agg(j.id) FROM ${jobs} j
        WHERE j.id IN (SELECT id FROM candidates) AND j.id NOT IN (SELECT id FROM expired) AND j.status = 'running' AND j.locked_until IS NOT NULL
        GROUP BY j.locked_by
      ), held AS MATERIALIZED (
        SELECT j.id, j.attempts, j.max_attempts, coalesce(j.locked_by, '?') AS worker, j.locked_until >= now() AS early,
               j.started_at IS NULL
                 AND (SELECT count(*) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j.errors) = 'array' THEN j.errors ELSE '[]' END) e
                      WHERE e ->> 'started' = 'false') < ${maxUnstartedRefunds} AS refund,
               j.attempts + (j.started_at IS NULL)::int AS attempt
        FROM ${jobs} j JOIN expired USING (id)
      ), reborn AS (
        UPDATE ${s}.workers w SET started_at = now() WHERE w.id = ANY(ARRAY(SELECT worker FROM held WHERE early))
      ), described AS (
        SELECT id, refund, attempt, NOT refund AND attempt >= max_attempts AS last,
               CASE WHEN early AND refund
                    THEN format('worker %s held the job reserved and showed no sign of life for ${workerStaleSeconds} s; attempt %s of %s not spent',
                                worker, attempt, max_attempts)
                    WHEN early
                    THEN format('worker %s showed no sign of life for ${workerStaleSeconds} s on attempt %s of %s', worker, attempt, max_attempts)
                    WHEN refund
                    THEN format('lease expired before the job started (worker %s held it); attempt %s of %s not spent',
                                worker, attempt, max_attempts)
                    ELSE format('lease expired on attempt %s of %s (worker %s died or overran its lease)', attempt, max_attempts, worker)
               END AS message
        FROM held
      ),
      `,
        `UPDATE ${jobs} j
      SET status = CASE WHEN d.last THEN 'dead' ELSE 'ready' END,
          attempts = CASE WHEN d.refund THEN j.attempts ELSE d.attempt END,
          finished_at = CASE WHEN d.last THEN now() END,
          run_at = CASE WHEN d.last THEN j.run_at ELSE now() END,
          last_error = CASE WHEN d.last THEN coalesce(j.last_error || E'\\n', '') || d.message ELSE j.last_error END,
          errors = ${appendError(`CASE WHEN d.refund THEN jsonb_build_object('attempt', d.attempt, 'at', now(), 'error', d.message, 'started', false)
                                         ELSE jsonb_build_object('attempt', d.attempt, 'at', now(), 'error', d.message) END`)},
          locked_until = NULL, locked_by = NULL
      FROM described d WHERE j.id = d.id AND ${countsBatches}`,
        "id, status",
        "rescue",
      ),
      true,
    ),

    /* getJob — $1 id; rows: job */
    getJob: statement(`SELECT ${jobColumns} FROM ${s}.all_jobs j WHERE j.id = $1`),

    /* listDead — $1 kind (null = all), $2 limit, $3 after id (keyset); rows: job */
    listDead: statement(`
      SELECT ${jobColumns} FROM ${jobs} j
      WHERE j.outcome = 'dead' AND ($1::text IS NULL OR j.kind = $1) AND j.id > $3::bigint
      ORDER BY j.id LIMIT $2`),

    /*
     * retryDead — dead jobs back to ready with attempts reset; last_error and the errors
     * history are kept. Members of a batch not finished yet count as unfinished again, once
     * per batch (see batchesCounted). $1 id bigint[] (null = by kind), $2 kind (null = any);
     * rows: id
     */
    retryDead: statement(`
      WITH retried AS (
        UPDATE ${jobs} j
        SET status = 'ready', attempts = 0, run_at = now(), finished_at = NULL
        WHERE j.outcome = 'dead'
          AND ($1::bigint[] IS NULL OR j.id = ANY($1::bigint[]))
          AND ($2::text IS NULL OR j.kind = $2) AND ${countsBatches}
        RETURNING j.id, j.batch_id
      ), ${batchesCounted(s, "retried", "reopened")}
      SELECT retried.id, pg_notify('${channel}', '') IS NULL AS notified FROM retried`),

    /* discardDead — deletes dead jobs; same filters as retryDead; rows: id */
    discardDead: statement(`
      DELETE FROM ${jobs} j
      WHERE j.outcome = 'dead'
        AND ($1::bigint[] IS NULL OR j.id = ANY($1::bigint[]))
        AND ($2::text IS NULL OR j.kind = $2)
      RETURNING j.id`),

    /*
     * cancel — cancels ready (incl. scheduled) and running jobs: status cancelled, for
     * good. A running row keeps locked_by: its worker's next heartbeat sees it, aborts the
     * handler and lets go; a notice on the jobs channel (cancelNotice) makes the workers send
     * that heartbeat at once. Explicit ids are all-or-nothing: if one is unknown or already
     * finished (done_jobs holds most done ones: `moved`), nothing changes and the rows say why. By kind: only its ready and running
     * jobs. Counted for stats (outcome_counts.cancelled, and done_counts.cancelled: the
     * cancelled jobs retained, which the delete trigger subtracts), and announced to waitFor like
     * every other finish. Batch members are counted once per batch (see batchesCounted).
     * The update takes every found row or none, so the rows say so from `found` and
     * `allowed` alone: found joined to the update's rows, which the planner expects one of
     * each, compared every pair (16,000,000 for 4,000 jobs: 3 s, 8.5 s for 10,000).
     * $1 id bigint[] (null = by kind), $2 kind (null = any); rows: id, status (before),
     * cancelled (whether this statement cancelled it)
     */
    cancel: statement(`
      WITH found AS (
        SELECT j.id, j.kind, j.status FROM ${jobs} j
        WHERE ($1::bigint[] IS NULL OR j.id = ANY($1::bigint[])) AND ($2::text IS NULL OR j.kind = $2)
          AND ($1::bigint[] IS NOT NULL OR j.status IN ('ready', 'running'))
        FOR UPDATE
      ), moved AS (
        SELECT j.id, j.kind, j.status FROM ${s}.done_jobs j
        WHERE j.id = ANY($1::bigint[]) AND ($2::text IS NULL OR j.kind = $2)
      ), allowed AS (
        SELECT NOT EXISTS (SELECT 1 FROM found WHERE status NOT IN ('ready', 'running')) AND NOT EXISTS (SELECT 1 FROM moved)
               AND ($1::bigint[] IS NULL OR (SELECT count(*) FROM found) = (SELECT count(DISTINCT x) FROM unnest($1::bigint[]) x)) AS ok
      ), changed AS (
        UPDATE ${jobs} j
        SET status = 'cancelled', finished_at = now(), locked_until = NULL
        FROM found f
        WHERE j.id = f.id AND (SELECT ok FROM allowed) AND ${countsBatches}
        RETURNING j.id, j.kind, j.status, j.batch_id
      ), ${batchesCounted(s, "changed", "finished")}, tallied AS (
        INSERT INTO ${s}.outcome_counts AS c (bucket, kind, shard, cancelled)
        SELECT to_timestamp(floor(extract(epoch FROM now()) / 10) * 10), kind, pg_backend_pid() % 4, count(*)
        FROM changed GROUP BY kind ORDER BY kind
        ON CONFLICT (bucket, kind, shard) DO UPDATE SET cancelled = c.cancelled + excluded.cancelled
      ), retained AS (
        INSERT INTO ${s}.done_counts AS c (kind, shard, cancelled)
        SELECT kind, pg_backend_pid() % 4, count(*) FROM changed GROUP BY kind ORDER BY kind
        ON CONFLICT (kind, shard) DO UPDATE SET cancelled = c.cancelled + excluded.cancelled
      )
      SELECT f.id, f.status, (SELECT ok FROM allowed) AS cancelled,
             CASE WHEN f.status = 'running' AND (SELECT ok FROM allowed) THEN pg_notify('${channel}', '${cancelNotice}') END IS NULL AS stopped,
             ${waitNotice(waitChannel, "f", "")}
      FROM found f
      UNION ALL
      SELECT id, status, false, true, true FROM moved`),
  };
}

/**
 * The per-job values of a batch statement, keyed by job id, as one JSON object: the
 * batch statements (complete, fail, release, heartbeat) find their rows with
 * `id = ANY($1)` on the primary key and look each row's values up here.
 *
 * They used to join `unnest($ids, $attempts, …)` to the table, and that join's plan
 * depended on the statistics: when they said no job was running, the planner expected
 * one row from the table and rescanned the unnested list for every running row — a
 * million comparisons for a 1,000-job batch (250–400 ms instead of 20). A key lookup
 * in a JSON object costs the same whatever the plan.
 */
export function byId<T>(ids: readonly string[], values: readonly T[]): string {
  // Written out rather than JSON.stringify'd from an object: numeric keys make V8 keep
  // such an object as a slow sparse array. Ids are digits only (bigint as text).
  let json = "{";
  for (let i = 0; i < ids.length; i++) json += `${i ? "," : ""}"${ids[i]!}":${JSON.stringify(values[i])}`;
  return `${json}}`;
}

/**
 * {@link byId} for values that are JSON text already (results and progress, serialised
 * and checked when the handler gave them): each job's value is an object of `fields`,
 * a field left out when its text is undefined.
 */
export function byIdJson(ids: readonly string[], fields: readonly Readonly<Record<string, string | number | undefined>>[]): string {
  let json = "{";
  for (let i = 0; i < ids.length; i++) {
    let value = "";
    for (const [key, text] of Object.entries(fields[i]!)) if (text !== undefined) value += `${value ? "," : ""}"${key}":${text}`;
    json += `${i ? "," : ""}"${ids[i]!}":{${value}}`;
  }
  return `${json}}`;
}

/**
 * Wraps an outcome UPDATE on `jobs j` so the same statement counts what it changed, for
 * stats: outcomes per kind in 10-second buckets (`outcome_counts`) and, for completions,
 * the retained done jobs per kind (`done_counts`). One upsert per kind per batch, sharded
 * by backend so concurrent workers seldom wait on one counter row. Only the statements
 * that finish attempts pay for it — claims and heartbeats do not. The update also counts
 * the batch members it finished (see batchesCounted): it takes running rows only, and
 * must carry the mark countsBatches among its conditions. `moved`: a CTE among `ctes`
 * whose rows (id, kind, status) the statement finished too (a completion's jobs moved to
 * done_jobs, none of them in a batch), counted and announced with the update's.
 */
function counted(
  s: string,
  waitChannel: string,
  ctes: string,
  update: string,
  returning: string,
  outcome: "done" | "failure" | "rescue" | "timeout",
  moved?: string,
): string {
  // A timed-out attempt is a failure, also counted as a timeout.
  const timeouts = outcome === "timeout";
  // A rescue that returns a reservation unspent (see rescue) is not a failed attempt.
  const tallies =
    outcome === "done" ? "count(*), 0, 0" : `0, count(*)${outcome === "rescue" ? " FILTER (WHERE NOT refund)" : ""}, count(*) FILTER (WHERE status = 'dead')`;
  const keptDone =
    outcome === "done"
      ? `, kept AS (
        INSERT INTO ${s}.done_counts AS c (kind, shard, done)
        SELECT kind, pg_backend_pid() % 4, count(*) FROM changed GROUP BY kind ORDER BY kind
        ON CONFLICT (kind, shard) DO UPDATE SET done = c.done + excluded.done)`
      : "";
  return `
      WITH ${ctes}${moved ? "updated" : "changed"} AS (
        ${update}
        RETURNING j.id, j.kind, j.status, j.batch_id${outcome === "rescue" ? ", d.refund" : ""}
      )${moved ? `, changed AS (SELECT id, kind, status FROM updated UNION ALL SELECT id, kind, status FROM ${moved})` : ""}, ${batchesCounted(s, moved ? "updated" : "changed", outcome === "done" ? "done" : "finished")}, tallied AS (
        INSERT INTO ${s}.outcome_counts AS c (bucket, kind, shard, done, failed, died${timeouts ? ", timed_out" : ""})
        SELECT to_timestamp(floor(extract(epoch FROM now()) / 10) * 10), kind, pg_backend_pid() % 4, ${tallies}${timeouts ? ", count(*)" : ""}
        FROM changed GROUP BY kind ORDER BY kind
        ON CONFLICT (bucket, kind, shard) DO UPDATE
          SET done = c.done + excluded.done, failed = c.failed + excluded.failed, died = c.died + excluded.died${
            timeouts ? ", timed_out = c.timed_out + excluded.timed_out" : ""
          })${keptDone}
      SELECT ${returning}, ${waitNotice(waitChannel, "f", "WHERE status IN ('done', 'dead')")} FROM changed`;
}

/**
 * The batch members a statement moved (the rows of `rows`), counted once per batch. `moves`:
 * what the rows did: all finished as done (`done`: a completion), each finished as done,
 * dead or cancelled or not at all (`finished`: a failure, a rescue, a cancel; ready or
 * running before, as the statements that say so take only those), or all went from dead
 * back to ready (`reopened`: retryDead; unfinished again). Its CTEs update each of their
 * batches' rows once, where the member trigger would update it once per member, each
 * update walking the row versions the earlier ones left (migration 032). The rows are
 * found by id (no join: with none of the statement's rows in a batch, as usual, nothing is
 * read), and the counts per batch come from one object. A batch whose count of unfinished
 * members reaches 0 here gets its callback from the batch row's trigger, at the end of the
 * statement. The statement's update must carry the mark countsBatches, which keeps the
 * member trigger off its rows.
 */
function batchesCounted(s: string, rows: string, moves: "done" | "finished" | "reopened"): string {
  /** What the members counted do to their batch's row: [column, sign, which members (a filter; all when absent)]. */
  const changes: readonly (readonly [string, "+" | "-", string?])[] =
    moves === "done"
      ? [["remaining", "-"], ["done", "+"]]
      : moves === "reopened"
        ? [["remaining", "+"], ["dead", "-"]]
        : [["remaining", "-"], ["done", "+", "status = 'done'"], ["dead", "+", "status = 'dead'"], ["cancelled", "+", "status = 'cancelled'"]];
  const counts = changes.map(([, , which]) => `count(*)${which ? ` FILTER (WHERE ${which})` : ""}`);
  /** The statement's count of batch b's members at `index` of counts. */
  const members = (index: number) => `((SELECT jsonb_object_agg(batch_id, counts) FROM batch_counts) -> b.id::text ->> ${index})::int`;
  return `batch_counts AS (
        SELECT batch_id, jsonb_build_array(${counts.join(", ")}) AS counts
        FROM ${rows} WHERE batch_id IS NOT NULL${moves === "finished" ? " AND status IN ('done', 'dead', 'cancelled')" : ""} GROUP BY batch_id
      ), batched AS (
        UPDATE ${s}.batches b
        SET ${changes.map(([column, sign], index) => `${column} = b.${column} ${sign} ${members(index)}`).join(", ")}
        WHERE b.id = ANY(ARRAY(SELECT batch_id FROM batch_counts)) AND b.finished_at IS NULL
      )`;
}

/**
 * The mark that a statement counts its batch members itself (see batchesCounted): a
 * condition of its update, true, that sets errand.batch_counted to the statement's start
 * for the rest of its transaction before any row is updated. The member trigger passes
 * over rows updated while the mark names the statement under way (migration 032).
 */
const countsBatches = "set_config('errand.batch_counted', statement_timestamp()::text, true) IS NOT NULL";

/**
 * The completed jobs that move to done_jobs (see migration 018): no dedupe key, batch or
 * concurrency key; the others stay in jobs, marked done. A function of the three, not
 * `dedupe_key IS NULL AND …`: statistics that saw few rows made the planner read every
 * NULL entry of the dedupe_key index (every plain job) for that condition instead of the
 * primary key for the ids.
 */
const movesOut = "num_nulls(j.dedupe_key, j.batch_id, j.concurrency_key) = 3";

/**
 * A completion, counted (see counted): the held jobs (`held`, a condition on `jobs j`)
 * that may move (movesOut) are deleted from jobs and written to done_jobs as done, in
 * one statement; the others are marked done where they are. `result` and `progress`:
 * their values, as expressions on `j` (for the move, the deleted row). done_jobs's
 * columns are jobs', in order.
 * `ids`: the jobs' ids, an array expression; `held`: the other conditions on `j`.
 * The update takes every held row among the ids the delete did not return, not the rows
 * that fail movesOut: an enqueue may release a running job's dedupe key between this
 * statement's snapshot and its delete, which then skips the row as keyed while the
 * update, re-checking the new version, would skip it as plain, and the job would stay
 * running until its lease ran out and then run again. Those ids are taken out before the
 * update looks (an empty array when all moved, as is usual): looking up the moved rows
 * again to filter them out cost the completion of 100 jobs about a third of its time.
 */
function completion(s: string, waitChannel: string, ids: string, held: string, result: string, progress: string): string {
  const jobs = `${s}.jobs`;
  return counted(
    s,
    waitChannel,
    `gone AS (
        DELETE FROM ${jobs} j WHERE j.id = ANY(${ids}) AND ${held} AND ${movesOut}
        RETURNING j.*
      ), moved AS (
        INSERT INTO ${s}.done_jobs (id, kind, payload, status, priority, attempts, max_attempts, run_at, locked_until, locked_by,
                                    last_error, errors, retry, dedupe_key, created_at, started_at, finished_at, timeout_ms, checkpoint,
                                    result, progress, queue, dedupe_mode, dedupe_until, batch_id, concurrency_key)
        SELECT j.id, j.kind, j.payload, 'done', j.priority, ${heldAttempt}, j.max_attempts, j.run_at, NULL, NULL,
               j.last_error, j.errors, j.retry, j.dedupe_key, j.created_at, coalesce(j.started_at, now()), now(), j.timeout_ms, j.checkpoint,
               ${result}, ${progress}, j.queue, j.dedupe_mode, j.dedupe_until, j.batch_id, j.concurrency_key
        FROM gone j
        RETURNING id, kind, status
      ), `,
    `UPDATE ${jobs} j
      SET status = 'done', attempts = ${heldAttempt}, started_at = coalesce(j.started_at, now()),
          locked_until = NULL, locked_by = NULL, finished_at = now(), result = ${result}, progress = ${progress}
      WHERE j.id = ANY(ARRAY(SELECT unnest(${ids}) EXCEPT ALL SELECT id FROM gone)) AND ${held} AND ${countsBatches}`,
    "id",
    "done",
    "moved",
  );
}

/**
 * complete and completeWithValues. `withValues`: $2 holds {a: attempt, r?: result, p?:
 * progress} per job instead of the attempt alone; an absent `r` stores no result, an
 * absent `p` keeps the progress written before.
 */
function completeMany(s: string, waitChannel: string, withValues: boolean): string {
  const attempt = withValues ? "($2::jsonb -> j.id::text ->> 'a')::int" : "($2::jsonb ->> j.id::text)::int";
  const held = `${heldAttempt} = ${attempt} AND j.status = 'running' AND j.locked_by = $3`;
  return withValues
    ? completion(s, waitChannel, "$1::bigint[]", held, "$2::jsonb -> j.id::text -> 'r'", "coalesce($2::jsonb -> j.id::text -> 'p', j.progress)")
    : completion(s, waitChannel, "$1::bigint[]", held, "j.result", "j.progress");
}

/**
 * A select-list column (`noticed`) that tells the workers about jobs inserted with a run_at
 * before their transaction began (given in the past: a schedule's missed slot, a runAt taken
 * from a clock behind the server's): they lie below the claim floors of busy workers, which
 * the insert trigger's notice (migration 019: the transaction's start) does not reach. One
 * notice on the jobs channel `channel` in the same form, the earliest such run_at in epoch
 * microseconds, so a worker lowers its floor there or probes at once (ClaimFloor.since in
 * src/worker/claim-floor.ts). `runAts`: a query of the inserted rows' run_at. An uncorrelated
 * subquery: once per statement, and no notice when no run_at is before now().
 */
export function pastRunAtNotice(channel: string, runAts: string): string {
  return `(SELECT pg_notify('${channel}', n) FROM (SELECT ${pastRunAt(runAts)} AS n) x WHERE n IS NOT NULL) IS NULL AS noticed`;
}

/** The payload of pastRunAtNotice: the earliest of `runAts` before now() in epoch microseconds, else null. */
function pastRunAt(runAts: string): string {
  return `(SELECT greatest(0, floor(extract(epoch FROM p.earliest) * 1000000))::bigint::text
               FROM (SELECT min(run_at) AS earliest FROM (${runAts}) r) p WHERE p.earliest < now())`;
}

/**
 * The notice columns of an enqueue statement. Its insert's own notice, the transaction's
 * start, comes from the insert trigger (migration 019) at commit, and jobs with a run_at
 * in the past get one more (see pastRunAtNotice). `after` (errand's own connection, no
 * caller's transaction): both are returned instead, as `start_notice` and `past_notice`
 * (null when no run_at is in the past; the start null when the trigger would not have sent
 * it, see jobs_notice_wanted in migration 026), and the trigger is told to stay silent for this
 * transaction (migration 023); errand sends them with announceJobs once the insert has committed.
 * `s`: the schema, quoted.
 */
function insertNotice(s: string, channel: string, runAts: string, after: boolean): string {
  if (!after) return pastRunAtNotice(channel, runAts);
  return `${pastRunAt(runAts)} AS past_notice,
             CASE WHEN ${s}.jobs_notice_wanted() THEN floor(extract(epoch FROM now()) * 1000000)::bigint::text END AS start_notice,
             set_config('errand.jobs_notice', 'after', true) AS quiet`;
}

/**
 * A select-list column (`notified`) that announces rows of the `changed` CTE to
 * `errand.waitFor` on the wait channel: one pg_notify per statement whatever the batch
 * size, its payload `kind:` and the ids joined by commas (`f` finished, `p` progress), or
 * `kind:*` (every waiter checks its job) when the ids would pass PostgreSQL's 8000-byte
 * payload limit. An uncorrelated subquery, so it runs once per statement, and not at all
 * when no row changed or none passes `filter`. PostgreSQL delivers it at commit, to
 * listening sessions only.
 */
function waitNotice(channel: string, kind: "f" | "p", filter: string): string {
  return `(SELECT pg_notify('${channel}', CASE WHEN length(n.ids) < 7990 THEN '${kind}:' || n.ids ELSE '${kind}:*' END)
               FROM (SELECT string_agg(id::text, ',') AS ids FROM changed ${filter}) n WHERE n.ids IS NOT NULL) IS NULL AS notified`;
}
