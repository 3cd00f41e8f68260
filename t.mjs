import { PGlite } from "@electric-sql/pglite";
import { cpSync, rmSync } from "node:fs";
let t=Date.now(); const a = await PGlite.create(); await a.query("select 1"); console.log("mem", Date.now()-t); await a.close();
rmSync("/tmp/pgl-tpl",{recursive:true,force:true});
t=Date.now(); const b = await PGlite.create("/tmp/pgl-tpl"); await b.query("select 1"); console.log("new dir", Date.now()-t); await b.close();
t=Date.now(); rmSync("/tmp/pgl-c",{recursive:true,force:true}); cpSync("/tmp/pgl-tpl","/tmp/pgl-c",{recursive:true}); const c = await PGlite.create("/tmp/pgl-c"); await c.query("select 1"); console.log("copy+open", Date.now()-t); await c.close();
t=Date.now(); const d = await PGlite.create("/tmp/pgl-tpl"); const blob = await d.dumpDataDir("none"); await d.close(); console.log("dump", Date.now()-t);
t=Date.now(); const e = await PGlite.create({loadDataDir: blob}); await e.query("select 1"); console.log("mem from dump", Date.now()-t);
console.log(process.memoryUsage().rss/1e6)
