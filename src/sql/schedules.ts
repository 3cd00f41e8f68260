import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";

/** Every statement the schedules and the scheduler run, for one schema. */
export interface ScheduleQueries {
  readonly now: Statement;
  readonly upsert: Statement;
  readonly removeOthers: Statement;
  readonly list: Statement;
  readonly dueNames: Statement;
  readonly lockDue: Statement;
  readonly jobStatuses: Statement;
  readonly insertRuns: Statement;
  readonly advance: Statement;
  readonly trimRuns: Statement;
  readonly recordSuccesses: Statement;
  readonly pause: Statement;
  readonly resume: Statement;
  readonly remove: Statement;
}

/** The schedule statements for `schema` (memoised). */
export const scheduleQueriesFor = memoisePerSchema((schema): ScheduleQueries => build(qualified(schema)));

/** Columns of a schedule as the list returns them (plus the last job's status). */
const scheduleColumns = `s.name, s.cron, s.timezone, s.kind, s.payload, s.job_options, s.overlap, s.missed,
  s.catch_up_limit, s.grace_ms, s.paused, s.next_slot, s.last_slot, s.last_enqueued_slot, s.last_job_id,
  s.last_success_slot, s.last_success_at, s.last_success_job_id, s.last_skipped_slot, s.last_skip_reason,
  s.created_at, s.updated_at`;

function build(s: string): ScheduleQueries {
  const schedules = `${s}.schedules`;
  const runs = `${s}.schedule_runs`;
  const jobs = `${s}.jobs`;
  return {
    /* now — the database's clock, used when no clock is injected; rows: now */
    now: statement(`SELECT now() AS now`),

    /*
     * upsert — declares schedules, one array element each. A new one starts at its
     * next_slot (the first slot after now); an existing one keeps its state (next slot,
     * paused, history) unless its cron or time zone changed, when it restarts at next_slot
     * (the old slots are not "missed"). $1 name, $2 cron, $3 timezone, $4 kind, $5 payload
     * (JSON), $6 job_options (JSON), $7 overlap, $8 missed (all text[]), $9 catch_up_limit
     * int[], $10 grace_ms bigint[], $11 next_slot timestamptz[]. rows: name
     */
    upsert: statement(`
      INSERT INTO ${schedules} AS s (name, cron, timezone, kind, payload, job_options, overlap, missed, catch_up_limit, grace_ms, next_slot)
      SELECT d.name, d.cron, d.timezone, d.kind, d.payload::jsonb, d.job_options::jsonb, d.overlap, d.missed, d.catch_up_limit, d.grace_ms, d.next_slot
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::bigint[], $11::timestamptz[])
        AS d(name, cron, timezone, kind, payload, job_options, overlap, missed, catch_up_limit, grace_ms, next_slot)
      ON CONFLICT (name) DO UPDATE
      SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, kind = EXCLUDED.kind, payload = EXCLUDED.payload,
          job_options = EXCLUDED.job_options, overlap = EXCLUDED.overlap, missed = EXCLUDED.missed,
          catch_up_limit = EXCLUDED.catch_up_limit, grace_ms = EXCLUDED.grace_ms,
          next_slot = CASE WHEN s.cron IS DISTINCT FROM EXCLUDED.cron OR s.timezone IS DISTINCT FROM EXCLUDED.timezone
                           THEN EXCLUDED.next_slot ELSE s.next_slot END,
          updated_at = now()
      RETURNING s.name`),

    /* removeOthers — deletes schedules not named in $1 text[]; rows: name */
    removeOthers: statement(`DELETE FROM ${schedules} WHERE NOT (name = ANY($1::text[])) RETURNING name`),

    /* list — every schedule (or only $1 when not null) by name; rows: schedule + last_job_status */
    list: statement(`
      SELECT ${scheduleColumns}, j.status AS last_job_status
      FROM ${schedules} s LEFT JOIN ${s}.all_jobs j ON j.id = s.last_job_id
      WHERE $1::text IS NULL OR s.name = $1
      ORDER BY s.name`),

    /* dueNames — unpaused schedules with a slot at or before $1, oldest first, at most $2; rows: name */
    dueNames: statement(`
      SELECT name FROM ${schedules}
      WHERE NOT paused AND next_slot <= $1::timestamptz
      ORDER BY next_slot LIMIT $2`),

    /*
     * lockDue — locks up to $3 schedules due at $1 (only those named in $2 when not
     * null; none named in $4, those this tick already handled) that no other scheduler
     * holds. A row a competitor just advanced is re-checked against its new next_slot
     * and left out. rows: schedule (as list, without last_job_status)
     */
    lockDue: statement(`
      SELECT ${scheduleColumns} FROM ${schedules} s
      WHERE NOT s.paused AND s.next_slot <= $1::timestamptz AND ($2::text[] IS NULL OR s.name = ANY($2::text[]))
        AND NOT (s.name = ANY($4::text[]))
      ORDER BY s.next_slot LIMIT $3
      FOR UPDATE SKIP LOCKED`),

    /* jobStatuses — $1 job id bigint[]; rows: id, status (none for deleted jobs) */
    jobStatuses: statement(`SELECT id, status FROM ${s}.all_jobs WHERE id = ANY($1::bigint[])`),

    /*
     * insertRuns — records handled slots: $1 schedule text[], $2 slot timestamptz[], $3
     * job id bigint[] (null when skipped), $4 skip reason text[] (null when enqueued). A
     * slot already recorded is left alone. rows: none
     */
    insertRuns: statement(`
      INSERT INTO ${runs} (schedule, slot, job_id, skipped)
      SELECT r.schedule, r.slot, r.job_id, r.skipped
      FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::text[]) AS r(schedule, slot, job_id, skipped)
      ON CONFLICT (schedule, slot) DO NOTHING`),

    /*
     * advance — moves schedules on after a tick, one array element per schedule: $1 name,
     * $2 next_slot, $3 last handled slot, $4 last enqueued slot (null = unchanged), $5 its
     * job id, $6 last skipped slot (null = unchanged), $7 its reason. rows: none
     */
    advance: statement(`
      UPDATE ${schedules} s
      SET next_slot = a.next_slot,
          last_slot = greatest(s.last_slot, a.last_slot),
          last_enqueued_slot = coalesce(a.enqueued_slot, s.last_enqueued_slot),
          last_job_id = CASE WHEN a.enqueued_slot IS NULL THEN s.last_job_id ELSE a.job_id END,
          last_skipped_slot = coalesce(a.skipped_slot, s.last_skipped_slot),
          last_skip_reason = CASE WHEN a.skipped_slot IS NULL THEN s.last_skip_reason ELSE a.reason END,
          updated_at = now()
      FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::bigint[], $6::timestamptz[], $7::text[])
        AS a(name, next_slot, last_slot, enqueued_slot, job_id, skipped_slot, reason)
      WHERE s.name = a.name`),

    /*
     * trimRuns — forgets the slots of schedules $1 text[] before $2 whose job is no
     * longer ready or running (the schedule row keeps the last slot and last success).
     * rows: none
     */
    trimRuns: statement(`
      DELETE FROM ${runs} r
      WHERE r.schedule = ANY($1::text[]) AND r.slot < $2::timestamptz
        AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = r.job_id AND j.status IN ('ready', 'running'))`),

    /*
     * recordSuccesses — copies, per schedule, its latest slot whose job is done into
     * last_success_*. Reads only runs newer than the recorded success, so it stays cheap;
     * it runs on the scheduler's tick and before a list, never in the worker's path.
     * rows: name
     */
    recordSuccesses: statement(`
      WITH latest AS (
        SELECT DISTINCT ON (r.schedule) r.schedule, r.slot, r.job_id, j.finished_at
        FROM ${schedules} s
        JOIN ${runs} r ON r.schedule = s.name AND r.slot > coalesce(s.last_success_slot, '-infinity'::timestamptz)
        JOIN ${s}.all_jobs j ON j.id = r.job_id AND j.status = 'done'
        ORDER BY r.schedule, r.slot DESC
      )
      UPDATE ${schedules} s
      SET last_success_slot = l.slot, last_success_at = l.finished_at, last_success_job_id = l.job_id
      FROM latest l WHERE s.name = l.schedule
      RETURNING s.name`),

    /* pause — $1 name; rows: name */
    pause: statement(`UPDATE ${schedules} SET paused = true, updated_at = now() WHERE name = $1 RETURNING name`),

    /*
     * resume — $1 name, $2 next slot (the first after now: slots during the pause are
     * skipped on purpose, not missed); a schedule that was not paused keeps its next
     * slot. rows: name
     */
    resume: statement(`
      UPDATE ${schedules}
      SET next_slot = CASE WHEN paused THEN $2::timestamptz ELSE next_slot END, paused = false, updated_at = now()
      WHERE name = $1 RETURNING name`),

    /* remove — deletes schedule $1 and its run history (jobs already enqueued stay); rows: name */
    remove: statement(`DELETE FROM ${schedules} WHERE name = $1 RETURNING name`),
  };
}
