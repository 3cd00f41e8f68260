import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";

/** Partitions of the outbox: a relay batch holds an advisory lock on each partition it reads. */
export const outboxPartitions = 16;

/** The statements of the outbox and its relay, for one schema. */
export interface OutboxQueries {
  readonly insert: Statement;
  readonly lockPartitions: Statement;
  readonly readBatch: Statement;
  readonly deleteSent: Statement;
  readonly backlog: Statement;
}

/** The NOTIFY channel of a schema's outbox (see the trigger in migration 014). */
export function outboxChannelFor(schema: string): string {
  return `errand_pub_${schema}`;
}

/** The statements for `schema` (memoised). */
export const outboxQueriesFor = memoisePerSchema((schema): OutboxQueries => build(schema, qualified(schema)));

function build(schema: string, s: string): OutboxQueries {
  const outbox = `${s}.outbox`;
  const partition = `(hashtext(coalesce(key, '')) & ${outboxPartitions - 1})`;
  return {
    /*
     * insert — a batch of messages in one statement. $1 a JSON array of objects with
     * topic, key (may be absent), message and headers (see encodeMessages). rows: ids
     * (bigint[] in input order)
     */
    insert: statement(`
      WITH inserted AS (
        INSERT INTO ${outbox} (topic, key, message, headers)
        SELECT e.m->>'topic', e.m->>'key', e.m->'message', coalesce(e.m->'headers', '{}')
        FROM jsonb_array_elements($1::text::jsonb) WITH ORDINALITY AS e(m, n)
        ORDER BY e.n
        RETURNING id)
      SELECT array_agg(id ORDER BY id) AS ids FROM inserted`),

    /*
     * lockPartitions — takes the transaction-level advisory lock of every free partition, in
     * the order given (a relay shuffles it), so that no two relays read the same key at once.
     * Run alone, before readBatch: READ COMMITTED gives readBatch a snapshot taken after the
     * locks, so it sees what the lock's previous holder deleted. $1 partitions int[].
     * rows: partitions (int[], null when none was free)
     */
    lockPartitions: statement(`
      SELECT array_agg(p) AS partitions FROM unnest($1::int[]) AS p
      WHERE pg_try_advisory_xact_lock(hashtext('errand.outbox:${schema}'), p)`),

    /*
     * readBatch — the oldest messages of the locked partitions, in id order. $1 partitions
     * int[] (null = all), $2 limit int. rows: id, topic, key, message (JSON text), headers,
     * created_at
     */
    readBatch: statement(`
      SELECT id, topic, key, message::text AS message, headers, created_at
      FROM ${outbox}
      WHERE $1::int[] IS NULL OR ${partition} = ANY($1::int[])
      ORDER BY id
      LIMIT $2`),

    /* deleteSent — the messages the broker acknowledged. $1 ids bigint[]. rows: none */
    deleteSent: statement(`DELETE FROM ${outbox} WHERE id = ANY($1::bigint[])`),

    /* backlog — messages waiting and the oldest one's age. No params. rows: messages (bigint string), oldest_ms */
    backlog: statement(`
      SELECT count(*) AS messages, extract(epoch FROM now() - min(created_at)) * 1000 AS oldest_ms FROM ${outbox}`),
  };
}
