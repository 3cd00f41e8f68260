import pg from "pg";
import { Errand } from "errand";

// The job commits or rolls back with your data: pass your client to enqueue.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
const errand = await Errand.open({ db: pool, schema: "shop" });
await pool.query("CREATE TABLE IF NOT EXISTS shop.orders (id int PRIMARY KEY, total int)");

const client = await pool.connect();
try {
  await client.query("BEGIN");
  await client.query("INSERT INTO shop.orders (id, total) VALUES (1042, 59000) ON CONFLICT DO NOTHING");
  const job = await errand.enqueue("send_receipt", { orderId: 1042 }, { db: client, dedupeKey: "receipt:1042" });
  await client.query("COMMIT"); // ROLLBACK instead, and neither the order nor the job exists
  console.log(`order saved, receipt job ${job.id}${job.duplicate ? " (already queued)" : ""}`);
} catch (error) {
  await client.query("ROLLBACK");
  throw error;
} finally {
  client.release();
}
await errand.close();
await pool.end();
