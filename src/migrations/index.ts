import type { Migration } from "./migration.js";
import { migration as m001 } from "./001-jobs.js";
import { migration as m002 } from "./002-schedules.js";
import { migration as m003 } from "./003-observe.js";
import { migration as m004 } from "./004-performance.js";
import { migration as m005 } from "./005-count-in-statements.js";
import { migration as m006 } from "./006-lease-index.js";
import { migration as m007 } from "./007-row-checks.js";
import { migration as m008 } from "./008-timeout-cancel.js";
import { migration as m009 } from "./009-checkpoint.js";
import { migration as m010 } from "./010-results-progress.js";
import { migration as m011 } from "./011-queues.js";
import { migration as m012 } from "./012-dedupe-modes.js";
import { migration as m013 } from "./013-batches.js";
import { migration as m014 } from "./014-outbox.js";
import { migration as m015 } from "./015-cancelled-retention.js";
import { migration as m016 } from "./016-limits.js";
import { migration as m017 } from "./017-queue-limits.js";
import { migration as m018 } from "./018-done-jobs.js";
import { migration as m019 } from "./019-notify-start.js";
import { migration as m020 } from "./020-state-mirrors.js";
import { migration as m021 } from "./021-hot-claims.js";
import { migration as m022 } from "./022-shared-floor.js";
import { migration as m023 } from "./023-notice-after-commit.js";
import { migration as m024 } from "./024-lease-ids-uncompressed.js";
import { migration as m025 } from "./025-notify-while-waiting.js";
import { migration as m026 } from "./026-notice-wanted.js";
import { migration as m027 } from "./027-stale-waiting.js";
import { migration as m028 } from "./028-ready-marks.js";
import { migration as m029 } from "./029-ready-mark-always.js";
import { migration as m030 } from "./030-ready-marks-replica-identity.js";
import { migration as m031 } from "./031-early-release.js";
import { migration as m032 } from "./032-batch-count-per-statement.js";

/**
 * Every migration, in order. A new one is a new file `NNN-name.ts` exporting `migration`
 * (copy the last one) and one more line here. An applied migration never changes what it
 * makes of the schema; only how it gets there may (011, 013, 015 and 016 moved their
 * index builds out of their transactions, so upgrades no longer stop the queue).
 */
export const migrations: readonly Migration[] = [m001, m002, m003, m004, m005, m006, m007, m008, m009, m010, m011, m012, m013, m014, m015, m016, m017, m018, m019, m020, m021, m022, m023, m024, m025, m026, m027, m028, m029, m030, m031, m032];
