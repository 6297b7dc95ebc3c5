#include "sqlite_schema.h"

#include <stdio.h>
#include <string.h>

#include "job.h"
#include "log.h"

/* Migration N is migrations[N - 1]. Append only. Statuses are enum job_status values
 * (0 scheduled, 1 queued, 2 running, 3 succeeded, 4 failed, 5 cancelled). */
static const char *const migrations[] = {
    /* 1: the jobs table and its indexes. */
    "CREATE TABLE jobs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT," /* never reused after retention deletes */
    " queue TEXT NOT NULL,"
    " status INTEGER NOT NULL,"
    " payload TEXT NOT NULL,"
    " priority INTEGER NOT NULL DEFAULT 0,"
    " run_at INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " max_attempts INTEGER NOT NULL,"
    " fencing_token INTEGER NOT NULL DEFAULT 0,"
    " max_runtime_seconds INTEGER,"
    " requires TEXT," /* compact JSON array, NULL when empty */
    " idempotency_key TEXT,"
    " created_at INTEGER NOT NULL,"
    " claimed_at INTEGER,"
    " heartbeat_at INTEGER,"
    " lease_expires_at INTEGER,"
    " lease_seconds INTEGER," /* the claim's lease length: heartbeat's default */
    " deadline_at INTEGER,"   /* claimed_at + max_runtime_seconds, NULL when unset */
    " lease_token TEXT,"
    " worker_id TEXT,"
    " finished_at INTEGER,"
    " result TEXT,"
    " progress TEXT,"
    " error_code TEXT,"
    " error_detail TEXT);"
    /* claim: due queued jobs in claim order; a future job is never in it (scheduled). */
    "CREATE INDEX jobs_claim ON jobs (queue, priority DESC, run_at, id) WHERE status = 1;"
    /* claim without capabilities: jobs with requirements never slow it down. */
    "CREATE INDEX jobs_claim_plain ON jobs (queue, priority DESC, run_at, id)"
    " WHERE status = 1 AND requires IS NULL;"
    /* promotion and next_due. */
    "CREATE INDEX jobs_scheduled ON jobs (run_at) WHERE status = 0;"
    /* sweep: expired leases and passed max runtimes. */
    "CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE status = 2;"
    "CREATE INDEX jobs_deadline ON jobs (deadline_at)"
    " WHERE status = 2 AND deadline_at IS NOT NULL;"
    /* sweep: retention. */
    "CREATE INDEX jobs_finished ON jobs (finished_at) WHERE status IN (3, 5);"
    /* enqueue: one job per (queue, idempotency_key). */
    "CREATE UNIQUE INDEX jobs_idempotency ON jobs (queue, idempotency_key)"
    " WHERE idempotency_key IS NOT NULL;"
    /* queues (covering counts) and lists filtered by queue. */
    "CREATE INDEX jobs_queue_status ON jobs (queue, status, id);",
    /* 2: one row that store_ping rewrites to learn whether the disk takes writes again after
     * a write failed as unavailable (disk full, I/O error, read-only). */
    "CREATE TABLE probe (id INTEGER PRIMARY KEY, writes INTEGER NOT NULL);",
    /* 3: the claim index holds only the jobs with requirements; the others are in
     * jobs_claim_plain alone, so most enqueues and claims update one index less. */
    "DROP INDEX IF EXISTS jobs_claim;"
    "CREATE INDEX IF NOT EXISTS jobs_claim_req ON jobs (queue, priority DESC, run_at, id)"
    " WHERE status = 1 AND requires IS NOT NULL;",
    /* 4: queue controls, attempt history and kept-up counts. Triggers keep counts (jobs per
     * queue and stored status) and attempts (one row per claim, ended by the statement that
     * ends the lease: it sets ended_at and attempt_outcome) in the transaction that changes
     * the job. */
    "CREATE TABLE queues (name TEXT PRIMARY KEY, paused INTEGER NOT NULL DEFAULT 0,"
    " changed_at INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE counts (queue TEXT NOT NULL, status INTEGER NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY (queue, status)) WITHOUT ROWID;"
    "INSERT INTO counts SELECT queue, status, count(*) FROM jobs GROUP BY queue, status;"
    "CREATE TABLE attempts (job_id INTEGER NOT NULL, fencing_token INTEGER NOT NULL,"
    " attempt INTEGER NOT NULL, worker_id TEXT, claimed_at INTEGER NOT NULL, ended_at INTEGER,"
    " outcome INTEGER NOT NULL, error_code TEXT, error_detail TEXT,"
    " PRIMARY KEY (job_id, fencing_token)) WITHOUT ROWID;"
    "ALTER TABLE jobs ADD COLUMN ended_at INTEGER;"
    "ALTER TABLE jobs ADD COLUMN attempt_outcome INTEGER;"
    /* queues: the oldest due queued job of one queue without reading the others. */
    "CREATE INDEX jobs_due ON jobs (queue, run_at) WHERE status = 1;"
    "CREATE TRIGGER jobs_track_insert AFTER INSERT ON jobs BEGIN"
    " INSERT INTO counts VALUES (NEW.queue, NEW.status, 1)"
    "  ON CONFLICT (queue, status) DO UPDATE SET n = n + 1; END;"
    "CREATE TRIGGER jobs_track_delete AFTER DELETE ON jobs BEGIN"
    " INSERT INTO counts VALUES (OLD.queue, OLD.status, -1)"
    "  ON CONFLICT (queue, status) DO UPDATE SET n = n - 1;"
    " DELETE FROM attempts WHERE job_id = OLD.id; END;"
    "CREATE TRIGGER jobs_track_status AFTER UPDATE OF status ON jobs"
    " WHEN OLD.status <> NEW.status BEGIN"
    " INSERT INTO counts VALUES (OLD.queue, OLD.status, -1)"
    "  ON CONFLICT (queue, status) DO UPDATE SET n = n - 1;"
    " INSERT INTO counts VALUES (NEW.queue, NEW.status, 1)"
    "  ON CONFLICT (queue, status) DO UPDATE SET n = n + 1;"
    " UPDATE attempts SET ended_at = NEW.ended_at, outcome = NEW.attempt_outcome,"
    "  error_code = CASE WHEN NEW.attempt_outcome BETWEEN 2 AND 5 THEN NEW.error_code END,"
    "  error_detail = CASE WHEN NEW.attempt_outcome BETWEEN 2 AND 5 THEN NEW.error_detail END"
    "  WHERE OLD.status = 2 AND job_id = OLD.id AND fencing_token = OLD.fencing_token;"
    " INSERT INTO attempts SELECT NEW.id, NEW.fencing_token, NEW.attempts, NEW.worker_id,"
    "  NEW.claimed_at, NULL, 0, NULL, NULL WHERE NEW.status = 2;"
    " END;"
    "CREATE TRIGGER jobs_track_attempts_kept AFTER UPDATE OF status ON jobs"
    " WHEN NEW.status = 2 AND NEW.fencing_token > " JOB_ATTEMPTS_KEPT_SQL " BEGIN"
    " DELETE FROM attempts WHERE job_id = NEW.id"
    "  AND fencing_token <= NEW.fencing_token - " JOB_ATTEMPTS_KEPT_SQL "; END;",
    /* 5: inserts and updates keep the counts and the attempt history themselves. A trigger on
     * a table makes SQLite keep a statement journal for every write of it (even when the
     * trigger's WHEN is false), and these ran five count rows and two attempt writes per job:
     * a quarter of the lifecycle's throughput. Counts: each write notes how its jobs moved and
     * the writer adds up a group's moves into one row per queue and status before its COMMIT
     * (sqlite_counts.h); deletes (retention, purge) still count by trigger, which also drops
     * the job's attempts. Attempts: while attempt_in_row is set, the job row is the record of
     * its latest attempt (fencing_token, attempts, worker_id, claimed_at, ended_at,
     * attempt_outcome, and error_code/error_detail for a failure): the claim sets it, the end
     * of the lease fills in how it ended, and only a requeue or a retry moves the attempt into
     * the attempts table (a job that runs once writes no attempt row). The open rows the
     * triggers wrote for running jobs move into their job rows. */
    "DROP TRIGGER IF EXISTS jobs_track_insert;"
    "DROP TRIGGER IF EXISTS jobs_track_status;"
    "DROP TRIGGER IF EXISTS jobs_track_attempts_kept;"
    "ALTER TABLE jobs ADD COLUMN attempt_in_row INTEGER;"
    "UPDATE jobs SET attempt_in_row = 1, ended_at = NULL, attempt_outcome = 0 WHERE status = 2"
    " AND EXISTS (SELECT 1 FROM attempts a WHERE a.job_id = jobs.id"
    " AND a.fencing_token = jobs.fencing_token AND a.outcome = 0);"
    "DELETE FROM attempts WHERE outcome = 0 AND EXISTS (SELECT 1 FROM jobs j WHERE"
    " j.id = attempts.job_id AND j.fencing_token = attempts.fencing_token"
    " AND j.attempt_in_row = 1);",
    /* 6: flow control (../shared/API.md "Flow control"). A job may carry a concurrency key,
     * an expiry and a dedup key (with the mode and seconds it was enqueued with). limits
     * holds the limit objects (a key ending in '*' is a pattern); keys the per-key state the
     * claim keeps (paused_until: snooze with pause_key); key_claims the claims of a
     * rate-limited key per second (the sliding window); lanes groups the queued jobs that a
     * claim cannot take blindly (those with requires or a concurrency key) by queue,
     * requires and key, so that a claim reads one row per lane instead of walking the jobs
     * of a saturated key or of requirements it cannot meet. */
    "ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;"
    "ALTER TABLE jobs ADD COLUMN expires_at INTEGER;"
    "ALTER TABLE jobs ADD COLUMN dedup_key TEXT;"
    "ALTER TABLE jobs ADD COLUMN dedup_mode INTEGER;"
    "ALTER TABLE jobs ADD COLUMN dedup_seconds INTEGER;"
    "ALTER TABLE jobs ADD COLUMN lane INTEGER;"
    /* claim: the jobs of a key that run now (max_running). */
    "CREATE INDEX jobs_key_running ON jobs (concurrency_key)"
    " WHERE status = 2 AND concurrency_key IS NOT NULL;"
    /* claim: one lane's queued jobs in claim order. */
    "CREATE INDEX jobs_lane ON jobs (lane, priority DESC, run_at, id)"
    " WHERE status = 1 AND lane IS NOT NULL;"
    /* enqueue: the earlier jobs of a dedup key. */
    "CREATE INDEX jobs_dedup ON jobs (queue, dedup_key, id) WHERE dedup_key IS NOT NULL;"
    /* sweep: queued jobs whose expiry passed. */
    "CREATE INDEX jobs_expires ON jobs (expires_at)"
    " WHERE expires_at IS NOT NULL AND status IN (0, 1);"
    "CREATE TABLE limits (key TEXT PRIMARY KEY, max_running INTEGER, rate_jobs INTEGER,"
    " rate_per_seconds INTEGER, changed_at INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE keys (key TEXT PRIMARY KEY, paused_until INTEGER NOT NULL DEFAULT 0)"
    " WITHOUT ROWID;"
    "CREATE TABLE key_claims (key TEXT NOT NULL, at INTEGER NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY (key, at)) WITHOUT ROWID;"
    /* head_*: the lane's best due job when it was last looked at; check_at: when it must be
     * looked at again (a job entered the lane, or a future one falls due); open_at: when its
     * key may run one more job (0: now). requires and ckey are '' when none. */
    "CREATE TABLE lanes (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
    " requires TEXT NOT NULL, ckey TEXT NOT NULL, head_id INTEGER, head_priority INTEGER,"
    " head_run_at INTEGER, check_at INTEGER NOT NULL, open_at INTEGER NOT NULL DEFAULT 0,"
    " UNIQUE (queue, requires, ckey));"
    "CREATE INDEX lanes_rank ON lanes (queue, head_priority DESC, head_run_at, head_id, open_at)"
    " WHERE head_id IS NOT NULL;"
    "CREATE INDEX lanes_check ON lanes (queue, check_at);"
    "CREATE INDEX lanes_key ON lanes (ckey) WHERE ckey <> '';"
    /* The jobs with requirements move into lanes; the plain claim index holds the others. */
    "INSERT INTO lanes (queue, requires, ckey, check_at)"
    " SELECT DISTINCT queue, requires, '', 0 FROM jobs WHERE requires IS NOT NULL;"
    "UPDATE jobs SET lane = (SELECT l.id FROM lanes l WHERE l.queue = jobs.queue"
    " AND l.requires = jobs.requires AND l.ckey = '') WHERE requires IS NOT NULL;"
    "DROP INDEX IF EXISTS jobs_claim_req;"
    "DROP INDEX IF EXISTS jobs_claim_plain;"
    "CREATE INDEX jobs_claim_free ON jobs (queue, priority DESC, run_at, id)"
    " WHERE status = 1 AND lane IS NULL;",
    /* 7: enqueue with dedup active or debounce: the newest unfinished job of a dedup key (not
     * succeeded, failed or cancelled), one probe however many finished jobs the key has;
     * jobs without a dedup key never enter it. */
    "CREATE INDEX jobs_dedup_live ON jobs (queue, dedup_key, id)"
    " WHERE dedup_key IS NOT NULL AND status NOT IN (3, 4, 5);",
    /* 8: workflows (depend.h). A blocked job has status 6, outside every claim index. deps: one
     * edge per (dependency, dependent), settled once the dependency's end was counted;
     * depends_on: the ids as the API shows them; deps_pending: a blocked job's unsettled
     * edges; has_dependents: the end of a job nobody waits for reads no edge; deps_todo: a
     * job whose dependents a transaction left for the sweeper (depend.h's step bound). */
    "ALTER TABLE jobs ADD COLUMN depends_on TEXT;"
    "ALTER TABLE jobs ADD COLUMN on_dep_failure INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN deps_pending INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN deps_todo INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_deps_todo ON jobs (id) WHERE deps_todo = 1;"
    "CREATE TABLE deps (dep_id INTEGER NOT NULL, job_id INTEGER NOT NULL,"
    " settled INTEGER NOT NULL, PRIMARY KEY (dep_id, job_id)) WITHOUT ROWID;"
    "CREATE INDEX deps_job ON deps (job_id, dep_id);"
    /* A deleted job takes its own edges along (those of its dependents stay: they are read
     * as settled). */
    "CREATE TRIGGER jobs_deps_gone AFTER DELETE ON jobs WHEN OLD.depends_on IS NOT NULL"
    " BEGIN DELETE FROM deps WHERE job_id = OLD.id; END;",
    /* 9: the sweeper drops the lanes that no job references (any status: a requeued or
     * retried job goes back to its lane by id), one probe per lane, and the claim rows of
     * keys that are not claimed any more. */
    "CREATE INDEX jobs_lane_any ON jobs (lane) WHERE lane IS NOT NULL;"
    /* The sweeper deletes the claim rows older than every window, oldest first. */
    "CREATE INDEX key_claims_at ON key_claims (at);",
    /* 10: schedules (recurring jobs): one row per schedule, its job body as given; next_run_at
     * is NULL while paused. rev grows with every write of a row (a tick's compare and swap).
     * ticker: one row, the last pass of any ticker (the ticks missed while none ran). */
    "CREATE TABLE schedules (name TEXT PRIMARY KEY, job TEXT NOT NULL, cron TEXT,"
    " every_seconds INTEGER, timezone TEXT NOT NULL, catch_up INTEGER NOT NULL,"
    " overlap INTEGER NOT NULL, paused INTEGER NOT NULL, next_run_at INTEGER,"
    " last_run_at INTEGER, last_job_id INTEGER, created_at INTEGER NOT NULL,"
    " updated_at INTEGER NOT NULL, rev INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX schedules_next ON schedules (next_run_at, name) WHERE next_run_at IS NOT NULL;"
    "CREATE TABLE ticker (id INTEGER PRIMARY KEY CHECK (id = 1), seen_at INTEGER NOT NULL);",
    /* 11: the sweep expires blocked jobs too (expiry.h): they join the expiry index. */
    "DROP INDEX jobs_expires;"
    "CREATE INDEX jobs_expires ON jobs (expires_at)"
    " WHERE expires_at IS NOT NULL AND status IN (0, 1, 6);",
    /* 12: the ticker row's stop mark: the store's now when a ticker stopped cleanly, NULL
     * again at the next pass of any ticker (schedule_downtime: the ticks after a clean stop
     * are missed; after a crash, those more than a grace after the last pass). */
    "ALTER TABLE ticker ADD COLUMN stopped_at INTEGER;",
    /* 13: the event log (event.h, docs/events.md): one row per change of a job's API status,
     * written by the transaction of the change (sqlite_events.h). seq is the rowid: only this
     * process writes, so it grows in commit order; the sweep deletes from the oldest end only
     * and never the newest row, so no seq is used twice. events_kept.pruned_through is the
     * highest seq deleted (a cursor below it has missed events: a gap). A job's trace context
     * (../shared/API.md "Events, webhooks and trace context") rides on the job and its
     * events. */
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, type INTEGER NOT NULL, at INTEGER NOT NULL,"
    " job_id INTEGER NOT NULL, queue TEXT NOT NULL, status INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL, fencing_token INTEGER NOT NULL, error_code TEXT,"
    " concurrency_key TEXT, traceparent TEXT);"
    "CREATE TABLE events_kept (id INTEGER PRIMARY KEY CHECK (id = 1),"
    " pruned_through INTEGER NOT NULL);"
    "INSERT INTO events_kept VALUES (1, 0);"
    "ALTER TABLE jobs ADD COLUMN traceparent TEXT;"
    "ALTER TABLE jobs ADD COLUMN tracestate TEXT;",
    /* 14: the SQS front end's queues (store_sqs.h): one row per queue created through SQS,
     * its attributes a JSON object of strings. Self-contained: renumber freely at a merge. */
    "CREATE TABLE sqs_queues (name TEXT PRIMARY KEY, attributes TEXT NOT NULL,"
    " created_at INTEGER NOT NULL, modified_at INTEGER NOT NULL) WITHOUT ROWID;",
    /* 15: webhook subscriptions (store_webhook.h, docs/events.md "Webhooks"): one row per
     * subscription with its delivery state (a cursor on the event log) and its delivery
     * lease, and the events unordered subscriptions parked. Self-contained: renumber freely
     * at a merge. */
    "CREATE TABLE webhooks (name TEXT PRIMARY KEY, url TEXT NOT NULL, types INTEGER NOT NULL,"
    " queues TEXT, secret TEXT NOT NULL, prev_secret TEXT, prev_until INTEGER,"
    " enabled INTEGER NOT NULL, ordered INTEGER NOT NULL, created_at INTEGER NOT NULL,"
    " updated_at INTEGER NOT NULL, delivered_seq INTEGER NOT NULL, failing_since INTEGER,"
    " next_attempt_at INTEGER, attempts INTEGER NOT NULL DEFAULT 0, last_status INTEGER,"
    " last_error TEXT, last_attempt_at INTEGER, disabled_reason TEXT,"
    " deliveries INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,"
    " failed_events INTEGER NOT NULL DEFAULT 0, lease_token TEXT, lease_until INTEGER,"
    " retry_at INTEGER) WITHOUT ROWID;"
    "CREATE TABLE webhook_parked (name TEXT NOT NULL, seq INTEGER NOT NULL,"
    " job_id INTEGER NOT NULL, attempts INTEGER NOT NULL, failing_since INTEGER,"
    " next_attempt_at INTEGER, PRIMARY KEY (name, seq)) WITHOUT ROWID;",
};

#define MIGRATIONS_COUNT ((int)(sizeof migrations / sizeof migrations[0]))

int sqlite_schema_version(void)
{
    return MIGRATIONS_COUNT;
}

static int exec(sqlite3 *db, const char *sql, const char *what)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        log_error("sqlite migration: %s failed: %s (%d)", what, err ? err : sqlite3_errstr(rc), rc);
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

int sqlite_schema_read(sqlite3 *db, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *version = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK)
        log_error("sqlite migration: cannot read user_version: %s (%d)", sqlite3_errmsg(db), rc);
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -1;
}

static int apply(sqlite3 *db, int from)
{
    char sql[64];
    for (int v = from; v < MIGRATIONS_COUNT; v++) {
        snprintf(sql, sizeof sql, "migration %d", v + 1);
        if (exec(db, migrations[v], sql) != 0)
            return -1;
    }
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", MIGRATIONS_COUNT);
    return exec(db, sql, "set user_version");
}

int sqlite_schema_migrate(sqlite3 *db)
{
    /* On a database SQLite opened read-only (the file is not writable) BEGIN IMMEDIATE starts
     * a read transaction: an up-to-date schema needs no write and opens; a migration fails. */
    if (exec(db, "BEGIN IMMEDIATE", "begin") != 0)
        return -1;
    int version = 0;
    int ok = sqlite_schema_read(db, &version) == 0;
    if (ok && version > MIGRATIONS_COUNT) {
        log_error("sqlite migration: database schema version %d is newer than this program's %d",
                  version, MIGRATIONS_COUNT);
        ok = 0;
    }
    if (ok && version < MIGRATIONS_COUNT) {
        ok = apply(db, version) == 0;
        if (ok)
            log_info("sqlite schema migrated from version %d to %d", version, MIGRATIONS_COUNT);
    }
    if (ok && exec(db, "COMMIT", "commit") == 0)
        return 0;
    if (!sqlite3_get_autocommit(db))
        exec(db, "ROLLBACK", "rollback");
    return -1;
}

int sqlite_schema_check(sqlite3 *db, const char *path, char *err, size_t n)
{
    sqlite3_stmt *st = NULL;
    int version = 0, tables = 0;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT (SELECT user_version FROM pragma_user_version), (SELECT "
                                "count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                                "'jobs')",
                                -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
        tables = sqlite3_column_int(st, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if ((rc & 0xff) == SQLITE_NOTADB)
        snprintf(err, n, "%s is not a SQLite database", path);
    else if (rc != SQLITE_OK)
        snprintf(err, n, "%s cannot be read: %s (%d)", path, sqlite3_errmsg(db), rc);
    else if (version < 1 || tables != 1)
        snprintf(err, n, "%s is not a jobq database (no jobs table of jobqd)", path);
    else if (version > MIGRATIONS_COUNT)
        snprintf(err, n, "%s was written by a newer jobqd (schema %d; this one knows %d)", path,
                 version, MIGRATIONS_COUNT);
    else
        return 0;
    return -1;
}

/* Prepare sql on db into *st. Returns 1, or 0 after logging why. */
static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        log_error("sqlite schema: cannot read the schema: %s (%d)", sqlite3_errmsg(db), rc);
    return rc == SQLITE_OK;
}

/* The statements sqlite_schema_present reads the two schemas with. */
struct present {
    sqlite3 *db;        /* the older file */
    sqlite3_stmt *cols; /* the current table ?1's columns and defaults (on the reference) */
    sqlite3_stmt *has;  /* 1 when the file's table ?1 has column ?2 (on db) */
    sqlite3_stmt *any;  /* how many columns the file's table ?1 has (on db) */
};

/* 1 when st, bound to the given texts, gives a row whose first column is not 0. */
static int yes(sqlite3_stmt *st, const char *a, const char *b)
{
    sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
    int r = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) != 0;
    sqlite3_reset(st);
    return r;
}

/* Make the current table `name` (made by `sql`) readable on p->db: an empty TEMP table when
 * the file lacks it, a TEMP view when it lacks columns, nothing when it has them all.
 * Returns 0, or -1 after logging why. */
static int present_table(struct present *p, const char *name, const char *sql)
{
    char *make = NULL;
    if (!yes(p->any, name, NULL)) {
        make = sqlite3_mprintf("CREATE TEMP %s", sql + strlen("CREATE "));
    } else {
        sqlite3_str *cols = sqlite3_str_new(NULL);
        int missing = 0;
        sqlite3_bind_text(p->cols, 1, name, -1, SQLITE_STATIC);
        while (sqlite3_step(p->cols) == SQLITE_ROW) {
            const char *col = (const char *)sqlite3_column_text(p->cols, 0);
            const char *dflt = (const char *)sqlite3_column_text(p->cols, 1);
            int has = yes(p->has, name, col);
            missing += !has;
            if (sqlite3_str_length(cols))
                sqlite3_str_appendall(cols, ", ");
            if (has)
                sqlite3_str_appendf(cols, "\"%w\"", col);
            else
                sqlite3_str_appendall(cols, dflt ? dflt : "NULL");
            sqlite3_str_appendf(cols, " AS \"%w\"", col);
        }
        sqlite3_reset(p->cols);
        char *list = sqlite3_str_finish(cols);
        if (missing && list)
            make = sqlite3_mprintf("CREATE TEMP VIEW \"%w\" AS SELECT %s FROM main.\"%w\"", name,
                                   list, name);
        sqlite3_free(list);
        if (!missing)
            return 0;
    }
    int r = make ? exec(p->db, make, name) : -1;
    if (!make)
        log_error("sqlite schema: out of memory presenting table %s", name);
    sqlite3_free(make);
    return r;
}

int sqlite_schema_present(sqlite3 *db)
{
    int version = 0;
    if (sqlite_schema_read(db, &version) != 0)
        return -1;
    if (version >= MIGRATIONS_COUNT)
        return 0;
    /* The current schema, as the migrations make it, in memory: what to present. */
    sqlite3 *ref = NULL;
    sqlite3_stmt *tables = NULL;
    struct present p = {.db = db};
    int ok =
        sqlite3_open(":memory:", &ref) == SQLITE_OK && apply(ref, 0) == 0 &&
        prepare(ref,
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE "
                "'CREATE TABLE %' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name",
                &tables) &&
        prepare(ref, "SELECT name, dflt_value FROM pragma_table_info(?1)", &p.cols) &&
        prepare(db, "SELECT count(*) FROM pragma_table_info(?1, 'main') WHERE name = ?2", &p.has) &&
        prepare(db, "SELECT count(*) FROM pragma_table_info(?1, 'main')", &p.any);
    /* query_only forbids the TEMP schema's writes too; the file stays read-only as opened. */
    ok = ok && exec(db, "PRAGMA query_only = 0", "present") == 0;
    while (ok && sqlite3_step(tables) == SQLITE_ROW)
        ok = present_table(&p, (const char *)sqlite3_column_text(tables, 0),
                           (const char *)sqlite3_column_text(tables, 1)) == 0;
    if (exec(db, "PRAGMA query_only = 1", "present") != 0)
        ok = 0;
    sqlite3_finalize(tables);
    sqlite3_finalize(p.cols);
    sqlite3_finalize(p.has);
    sqlite3_finalize(p.any);
    sqlite3_close(ref);
    if (ok)
        log_info("sqlite schema: reading a file of schema %d as schema %d", version,
                 MIGRATIONS_COUNT);
    return ok ? 0 : -1;
}
