#include "sqlite_stmt.h"

#include <assert.h>
#include <stddef.h>

#include "job.h"
#include "limit.h"

/* enum job_status values as SQL literals. Partial indexes only serve a query whose WHERE
 * repeats the index's terms, so statuses are literals here, never bound parameters. */
#define SCHEDULED "0"
#define QUEUED "1"
#define RUNNING "2"
#define SUCCEEDED "3"
#define FAILED "4"
#define CANCELLED "5"
#define BLOCKED "6"
_Static_assert(SQLITE_SCHEDULED == 0 && JOB_QUEUED == 1 && JOB_RUNNING == 2, "status literals");
_Static_assert(JOB_SUCCEEDED == 3 && JOB_FAILED == 4 && JOB_CANCELLED == 5 && JOB_BLOCKED == 6,
               "status literals");

/* enum attempt_outcome values the statements set as literals. */
#define OUTCOME_RUNNING "0"
#define OUTCOME_SUCCEEDED "1"
#define OUTCOME_CANCELLED "6"
_Static_assert(ATTEMPT_RUNNING == 0 && ATTEMPT_SUCCEEDED == 1 && ATTEMPT_CANCELLED == 6,
               "outcome literals");

/* The latest attempt of a job whose row is its record (attempt_in_row), in the columns of
 * the attempts table after job_id: the error is the attempt's when it failed (outcomes 2-5). */
#define ROW_ATTEMPT                                                                                \
    "fencing_token, attempts, worker_id, claimed_at, ended_at, attempt_outcome, "                  \
    "CASE WHEN attempt_outcome BETWEEN 2 AND 5 THEN error_code END, "                              \
    "CASE WHEN attempt_outcome BETWEEN 2 AND 5 THEN error_detail END"

#define COLS SQL_JOB_COLUMNS

/* LIMIT_NEVER (limit.h) as an SQL literal: a lane closed until a running job of its key ends. */
#define LANE_NEVER_SQL "9223372036854775807"
_Static_assert(LIMIT_NEVER == 9223372036854775807LL, "lane never literal");
/* A job with no expires_at, or one still ahead of now (expiry_passed, expiry.h: expired at
 * expires_at itself). */
#define NOT_EXPIRED(now) "(expires_at IS NULL OR expires_at > " now ")"
/* A job that is not finished, as the partial index jobs_dedup_live (migration 7) says it. */
#define DEDUP_LIVE "status NOT IN (" SUCCEEDED ", " FAILED ", " CANCELLED ")"

/* The lease that ?2 holds on job ?1 is live at time ?3. */
/* The maxReceiveCount and deadLetterTargetArn of the RedrivePolicy of the SQS queue of the
 * job `jobs` (NULLs: none; store_sqs.h). */
#define DEAD_LETTER_POLICY(field)                                                                  \
    "(SELECT CASE WHEN json_valid(p) THEN json_extract(p, '$." field "') END FROM "                \
    "(SELECT json_extract(attributes, '$.RedrivePolicy') AS p FROM sqs_queues "                    \
    "WHERE name = jobs.queue))"
#define DEAD_LETTER_COLS                                                                           \
    DEAD_LETTER_POLICY("maxReceiveCount") ", " DEAD_LETTER_POLICY("deadLetterTargetArn")

#define LIVE_LEASE                                                                                 \
    "id = ?1 AND lease_token = ?2 AND status = " RUNNING " AND lease_expires_at > ?3 AND "         \
    "(deadline_at IS NULL OR deadline_at > ?3)"

/* One branch of a list: jobs matching cond after id ?1, at most ?2 of them, by id. Each branch
 * is an index range already in id order, so the outer ORDER BY sorts at most a few limits. */
#define LIST_BRANCH(cond)                                                                          \
    "SELECT * FROM (SELECT " COLS " FROM jobs WHERE " cond " AND id > ?1 ORDER BY id LIMIT ?2)"
#define LIST_END " ORDER BY id LIMIT ?2"

/* export: the rows of a table beside the jobs after (?1, ?2) in (key, first) order, at most
 * ?3 of them; cols lists the texts, then the integers, first of them the order's second column
 * (store_copy.h). */
#define EXPORT_TABLE(cols, table, key, first)                                                      \
    "SELECT " cols " FROM " table " WHERE (" key ", " first ") > (?1, ?2) ORDER BY " key           \
    ", " first " LIMIT ?3"

/* One row per statement, laid out by hand. */
/* clang-format off */
static const struct stmt_def stmts[STMT_COUNT] = {
    [STMT_BEGIN] = {STMT_BEGIN,
     STMT_ON_WRITER, "BEGIN IMMEDIATE", "sqlite_tx_run: every write transaction"},
    [STMT_COMMIT] = {STMT_COMMIT, STMT_ON_WRITER | STMT_ON_READER | STMT_ON_EXPORT, "COMMIT",
     "sqlite_tx_run: commit; queues, export: end of its read transaction"},
    [STMT_ROLLBACK] = {STMT_ROLLBACK, STMT_ON_WRITER | STMT_ON_READER, "ROLLBACK",
     "sqlite_tx_run: a failed or busy transaction; readers: after a failed read transaction"},
    [STMT_READ_BEGIN] = {STMT_READ_BEGIN, STMT_ON_READER | STMT_ON_EXPORT, "BEGIN DEFERRED",
     "queues: one snapshot for the counts and the ages; export: one snapshot for the copy"},
    [STMT_PROBE_WRITE] = {STMT_PROBE_WRITE, STMT_ON_WRITER,
     "INSERT INTO probe (id, writes) VALUES (1, 1) "
     "ON CONFLICT (id) DO UPDATE SET writes = writes + 1",
     "ping: while writes fail as unavailable, a one-row write that tells when they work again"},
    [STMT_JOB_GET] = {STMT_JOB_GET,
     STMT_ON_WRITER | STMT_ON_READER, "SELECT " COLS " FROM jobs WHERE id = ?1",
     "get; every write: the job it changed (cheaper than RETURNING), and not_found vs "
     "lease_lost or conflict"},
    [STMT_JOB_BY_KEY] = {STMT_JOB_BY_KEY, STMT_ON_WRITER,
     "SELECT " COLS " FROM jobs WHERE queue = ?1 AND idempotency_key = ?2",
     "enqueue: the existing job of an idempotency_key hit"},
    [STMT_JOB_INSERT] = {STMT_JOB_INSERT, STMT_ON_WRITER,
     "INSERT INTO jobs (queue, status, payload, priority, run_at, max_attempts, "
     "max_runtime_seconds, requires, idempotency_key, created_at, concurrency_key, expires_at, "
     "dedup_key, dedup_mode, dedup_seconds, lane, traceparent, tracestate) "
     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) "
     "ON CONFLICT DO NOTHING",
     "enqueue: insert one job; no row changed means an idempotency_key hit"},
    [STMT_PROMOTE] = {STMT_PROMOTE, STMT_ON_WRITER,
     "UPDATE jobs SET status = " QUEUED
     " WHERE id IN (SELECT id FROM jobs WHERE status = " SCHEDULED
     " AND run_at <= ?1 ORDER BY run_at LIMIT ?2) RETURNING queue, lane",
     "claim (start of every claim) and sweep: move due scheduled jobs into the claim index"},
    [STMT_CLAIM_PICK_PLAIN] = {STMT_CLAIM_PICK_PLAIN, STMT_ON_WRITER,
     "SELECT id, priority, run_at FROM jobs WHERE status = " QUEUED
     " AND lane IS NULL AND queue = ?1 AND " NOT_EXPIRED("?3")
     " ORDER BY priority DESC, run_at, id LIMIT ?2",
     "claim: the top candidates of one queue among the jobs of no lane (no requires, no "
     "concurrency key) that have not expired at ?3"},
    [STMT_CLAIM_TAKE] = {STMT_CLAIM_TAKE, STMT_ON_WRITER,
     "UPDATE jobs SET status = " RUNNING ", lease_token = ?2, attempts = attempts + 1, "
     "fencing_token = fencing_token + 1, claimed_at = ?3, heartbeat_at = ?3, "
     "lease_expires_at = ?3 + ?4, lease_seconds = ?4, deadline_at = ?3 + max_runtime_seconds, "
     "worker_id = ?5, attempt_in_row = 1, ended_at = NULL, attempt_outcome = " OUTCOME_RUNNING
     " WHERE id = ?1 AND status = " QUEUED " AND " NOT_EXPIRED("?3"),
     "claim: compare-and-swap one chosen job from queued (and not expired) to running; the row "
     "is the record of the attempt that starts (a queued job's attempts are all in the "
     "attempts table)"},
    [STMT_HEARTBEAT] = {STMT_HEARTBEAT, STMT_ON_WRITER,
     "UPDATE jobs SET heartbeat_at = ?3, "
     "lease_expires_at = ?3 + CASE WHEN ?4 > 0 THEN ?4 ELSE lease_seconds END, "
     "progress = CASE WHEN ?5 THEN ?6 ELSE progress END "
     "WHERE " LIVE_LEASE, "heartbeat: extend a live lease, maybe store progress"},
    [STMT_COMPLETE] = {STMT_COMPLETE, STMT_ON_WRITER,
     "UPDATE jobs SET status = " SUCCEEDED ", finished_at = ?3, result = ?4, ended_at = ?3, "
     "attempt_outcome = " OUTCOME_SUCCEEDED " WHERE " LIVE_LEASE,
     "complete: a live lease ends in success (lease_token is kept for idempotent repeats)"},
    [STMT_LEASE_CHECK] = {STMT_LEASE_CHECK, STMT_ON_WRITER,
     "SELECT attempts, max_attempts, concurrency_key IS NOT NULL, concurrency_key, created_at, "
     DEAD_LETTER_COLS " FROM jobs WHERE " LIVE_LEASE,
     "fail and snooze: the lease is live, the attempts that decide requeue or failed (or that "
     "a snooze undoes), whether the job has a concurrency key, the key and created_at "
     "(job_requeue_at), its queue's dead-letter policy (job_dead_letter)"},
    [STMT_LEASE_END] = {STMT_LEASE_END, STMT_ON_WRITER,
     "UPDATE jobs SET status = ?2, run_at = coalesce(?3, run_at), finished_at = ?4, "
     "error_code = ?5, error_detail = ?6, lease_token = NULL, lease_expires_at = NULL, "
     "deadline_at = NULL, ended_at = ?7, attempt_outcome = ?8, "
     "attempt_in_row = CASE WHEN ?2 = " FAILED " THEN attempt_in_row END "
     "WHERE id = ?1 AND status = " RUNNING,
     "fail and sweep: a running job goes back to queued/scheduled or to failed; its lease "
     "is gone (claimed_at, heartbeat_at and worker_id stay as history); ?7 now, ?8 how the "
     "attempt ended (enum attempt_outcome), which the row keeps when it failed for good (a "
     "requeued job's attempt goes to the attempts table: STMT_ATTEMPT_END)"},
    [STMT_SNOOZE] = {STMT_SNOOZE, STMT_ON_WRITER,
     "UPDATE jobs SET status = ?4, run_at = ?5, attempts = ?6, lease_token = NULL, "
     "lease_expires_at = NULL, deadline_at = NULL, ended_at = ?3, attempt_outcome = ?7, "
     "attempt_in_row = NULL WHERE " LIVE_LEASE,
     "snooze: a running job whose lease is still live goes back to queued/scheduled as planned "
     "(job_snooze_plan); its attempt goes to the attempts table (STMT_ATTEMPT_END)"},
    [STMT_KEY_PAUSED] = {STMT_KEY_PAUSED,
     STMT_ON_WRITER, "SELECT paused_until FROM keys WHERE key = ?1",
     "snooze with pause_key: the pause the key holds (limit_pause_merge); claim: a key's pause"},
    [STMT_KEY_PAUSE] = {STMT_KEY_PAUSE, STMT_ON_WRITER,
     "INSERT INTO keys (key, paused_until) VALUES (?1, ?2) "
     "ON CONFLICT (key) DO UPDATE SET paused_until = excluded.paused_until",
     "snooze with pause_key: the key's merged pause"},
    [STMT_LANES_PAUSE] = {STMT_LANES_PAUSE, STMT_ON_WRITER,
     "UPDATE lanes SET open_at = max(open_at, ?2) WHERE ckey = ?1 AND ckey <> ''",
     "snooze with pause_key: the key's lanes open no earlier than its pause ends (lanes_key: "
     "its predicate repeated)"},
    [STMT_CANCEL] = {STMT_CANCEL, STMT_ON_WRITER,
     "UPDATE jobs SET status = " CANCELLED ", finished_at = ?2, lease_token = NULL, "
     "lease_expires_at = NULL, deadline_at = NULL, ended_at = ?2, "
     "attempt_outcome = " OUTCOME_CANCELLED " "
     "WHERE id = ?1 AND status IN (" SCHEDULED ", " QUEUED ", " RUNNING ", " BLOCKED ")",
     "cancel: a queued, scheduled, running or blocked job becomes cancelled"},
    [STMT_RETRY] = {STMT_RETRY, STMT_ON_WRITER,
     "UPDATE jobs SET status = " QUEUED ", attempts = 0, run_at = ?2, finished_at = NULL, "
     "attempt_in_row = NULL WHERE id = ?1 AND status IN (" FAILED ", " CANCELLED ")",
     "retry: a failed or cancelled job goes back to queued (its latest attempt was moved to "
     "the attempts table first: STMT_ATTEMPT_ARCHIVE)"},
    [STMT_SWEEP_EXPIRED] = {STMT_SWEEP_EXPIRED, STMT_ON_WRITER,
     "SELECT id, attempts, max_attempts, coalesce(deadline_at <= ?1, 0), concurrency_key, "
     "created_at, " DEAD_LETTER_COLS " FROM jobs WHERE status = " RUNNING
     " AND lease_expires_at <= ?1 UNION "
     "SELECT id, attempts, max_attempts, 1, concurrency_key, created_at, " DEAD_LETTER_COLS
     " FROM jobs WHERE status = " RUNNING " AND deadline_at <= ?1 LIMIT ?2",
     "sweep: running jobs whose lease expired or whose max runtime passed (the key and "
     "created_at: job_requeue_at; the queue's dead-letter policy: job_dead_letter)"},
    [STMT_SWEEP_DELETE] = {STMT_SWEEP_DELETE, STMT_ON_WRITER,
     "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status IN (" SUCCEEDED ", " CANCELLED
     ") AND finished_at < ?1 LIMIT ?2) RETURNING id, status, has_dependents, deps_todo",
     "sweep: retention deletes finished jobs older than the cutoff, each with what its "
     "dependents need (depend_purged)"},
    [STMT_EXPIRY_PICK] = {STMT_EXPIRY_PICK, STMT_ON_WRITER,
     "SELECT id, status, queue, has_dependents FROM jobs WHERE expires_at <= ?1 AND status IN (" SCHEDULED ", "
     QUEUED ", " BLOCKED ") ORDER BY expires_at LIMIT ?2",
     "sweep: queued, scheduled and blocked jobs whose expires_at passed, oldest first "
     "(jobs_expires)"},
    [STMT_EXPIRY_CANCEL] = {STMT_EXPIRY_CANCEL, STMT_ON_WRITER,
     "UPDATE jobs SET status = " CANCELLED ", finished_at = ?3, error_code = 'expired', "
     "error_detail = NULL WHERE id = ?1 AND status = ?2",
     "sweep: one job of STMT_EXPIRY_PICK becomes cancelled with error_code \"expired\" (?2: "
     "the status it was picked in, whose count it leaves)"},
    [STMT_LIST_ALL] = {STMT_LIST_ALL,
     STMT_ON_READER, "SELECT " COLS " FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2",
     "list: no filter"},
    [STMT_LIST_QUEUE] = {STMT_LIST_QUEUE, STMT_ON_READER,
     LIST_BRANCH("queue = ?3 AND status = " SCHEDULED) " UNION ALL "
     LIST_BRANCH("queue = ?3 AND status = " QUEUED) " UNION ALL "
     LIST_BRANCH("queue = ?3 AND status = " RUNNING) " UNION ALL "
     LIST_BRANCH("queue = ?3 AND status = " SUCCEEDED) " UNION ALL "
     LIST_BRANCH("queue = ?3 AND status = " FAILED) " UNION ALL "
     LIST_BRANCH("queue = ?3 AND status = " CANCELLED) " UNION ALL "
     LIST_BRANCH("queue = ?3 AND status = " BLOCKED) LIST_END,
     "list: one queue, any status (one ordered range per status)"},
    [STMT_LIST_STATUS] = {STMT_LIST_STATUS, STMT_ON_READER,
     LIST_BRANCH("status = ?3") " UNION ALL " LIST_BRANCH("status = ?4") LIST_END,
     "list: one API status (?4 is the second internal status, or -1)"},
    [STMT_LIST_QUEUE_STATUS] = {STMT_LIST_QUEUE_STATUS, STMT_ON_READER,
     LIST_BRANCH("queue = ?5 AND status = ?3") " UNION ALL "
     LIST_BRANCH("queue = ?5 AND status = ?4") LIST_END,
     "list: one queue and one API status"},
    [STMT_QUEUE_COUNTS] = {STMT_QUEUE_COUNTS, STMT_ON_READER,
     "SELECT queue, status, n FROM counts WHERE n <> 0 ORDER BY queue",
     "queues: jobs per queue and status, as the writes keep them (no scan of the jobs)"},
    [STMT_QUEUE_OLDEST] = {STMT_QUEUE_OLDEST, STMT_ON_READER,
     "SELECT q.queue, (SELECT min(m) FROM (SELECT min(run_at) AS m FROM jobs WHERE status = "
     QUEUED " AND queue = q.queue UNION ALL SELECT min(run_at) FROM jobs WHERE status = "
     SCHEDULED " AND run_at <= ?1 AND queue = q.queue)) FROM (SELECT DISTINCT queue FROM counts "
     "WHERE status IN (" SCHEDULED ", " QUEUED ") AND n > 0) AS q ORDER BY q.queue",
     "queues: the oldest due run_at of each queue that holds queued jobs (one index probe "
     "each: jobs_due, jobs_scheduled)"},
    [STMT_QUEUES_PAUSED] = {STMT_QUEUES_PAUSED,
     STMT_ON_READER, "SELECT name FROM queues WHERE paused ORDER BY name",
     "queues: the paused queues (listed even when they hold no job)"},
    [STMT_QUEUE_PAUSED] = {STMT_QUEUE_PAUSED,
     STMT_ON_WRITER, "SELECT 1 FROM queues WHERE name = ?1 AND paused",
     "claim: a paused queue is skipped before any of its jobs is read"},
    [STMT_QUEUE_SET] = {STMT_QUEUE_SET, STMT_ON_WRITER,
     "INSERT INTO queues (name, paused, changed_at) VALUES (?1, ?2, ?3) "
     "ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, changed_at = excluded.changed_at",
     "pause and resume"},
    [STMT_PURGE] = {STMT_PURGE, STMT_ON_WRITER,
     "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE queue = ?1 AND status = ?2 "
     "UNION ALL SELECT id FROM jobs WHERE queue = ?1 AND status = ?3 ORDER BY id LIMIT ?4) "
     "RETURNING id, status, has_dependents, deps_todo",
     "purge: one bounded batch of a queue's jobs in one API status (?3: the second stored "
     "status, or -1), each with what its dependents need (depend_purged)"},
    [STMT_LIMITS_READ] = {STMT_LIMITS_READ, STMT_ON_WRITER | STMT_ON_READER,
     "SELECT 0, key, max_running, rate_jobs, rate_per_seconds FROM limits "
     "WHERE key >= ?1 AND key < ?2 UNION ALL "
     "SELECT 1, concurrency_key, count(*), NULL, NULL FROM jobs WHERE status = " RUNNING
     " AND concurrency_key >= ?1 AND concurrency_key < ?2 GROUP BY concurrency_key UNION ALL "
     "SELECT 2, key, paused_until, NULL, NULL FROM keys "
     "WHERE key >= ?1 AND key < ?2 AND paused_until > ?3 UNION ALL "
     "SELECT 3, c.key, sum(c.n), NULL, NULL FROM limits l JOIN key_claims c ON c.key = l.key "
     "WHERE l.key >= ?1 AND l.key < ?2 AND l.rate_jobs IS NOT NULL "
     "AND c.at > ?3 - l.rate_per_seconds GROUP BY c.key UNION ALL "
     "SELECT 4, l.ckey, count(*), NULL, NULL FROM lanes l JOIN jobs j ON j.lane = l.id "
     "WHERE l.ckey >= ?1 AND l.ckey < ?2 AND l.ckey <> '' AND l.open_at > ?3 "
     "AND j.status = " QUEUED " AND j.run_at <= ?3 GROUP BY l.ckey ORDER BY 1, 2",
     "limits, and limit put and delete (their answer): the limits with keys in [?1, ?2) by "
     "key, then the running jobs and the pauses of the job keys in that range, the claims "
     "in the window of the limits' own keys, and the due jobs of the closed lanes of the "
     "keys in that range (store_limits.h's rows)"},
    [STMT_LIMIT_PUT] = {STMT_LIMIT_PUT, STMT_ON_WRITER,
     "INSERT INTO limits (key, max_running, rate_jobs, rate_per_seconds, changed_at) "
     "SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM limits WHERE key = ?1) "
     "OR (SELECT count(*) FROM limits) < ?6 "
     "ON CONFLICT (key) DO UPDATE SET max_running = excluded.max_running, "
     "rate_jobs = excluded.rate_jobs, rate_per_seconds = excluded.rate_per_seconds, "
     "changed_at = excluded.changed_at",
     "limit put: create or replace a limit; no row changed: a new key past ?6 limits"},
    [STMT_LIMIT_DELETE] = {STMT_LIMIT_DELETE, STMT_ON_WRITER, "DELETE FROM limits WHERE key = ?1",
     "limit delete"},
    [STMT_LANES_REOPEN_RANGE] = {STMT_LANES_REOPEN_RANGE, STMT_ON_WRITER,
     "UPDATE lanes SET open_at = 0 WHERE ckey >= ?1 AND ckey < ?2 AND ckey <> '' "
     "AND open_at <> 0 RETURNING queue",
     "limit put and delete: reopen the closed lanes of the keys in [?1, ?2) (lanes_key), "
     "whose queues are then told"},
    [STMT_ATTEMPTS] = {STMT_ATTEMPTS, STMT_ON_READER,
     "SELECT attempt, worker_id, claimed_at, ended_at, outcome, error_code, error_detail FROM ("
     "SELECT a.fencing_token AS f, a.attempt, a.worker_id, a.claimed_at, a.ended_at, a.outcome, "
     "a.error_code, a.error_detail FROM (SELECT id FROM jobs WHERE id = ?1) AS j "
     "LEFT JOIN attempts a ON a.job_id = j.id UNION ALL "
     "SELECT " ROW_ATTEMPT " FROM jobs WHERE id = ?1 AND attempt_in_row IS NOT NULL) ORDER BY f",
     "attempts: a job's attempt history, oldest first, the latest one from the job row while "
     "it is its record; no row: no such job; a row of NULLs: none in the attempts table"},
    [STMT_NEXT_DUE] = {STMT_NEXT_DUE, STMT_ON_WRITER | STMT_ON_READER,
     "SELECT min(run_at) FROM jobs WHERE status = " SCHEDULED,
     "next_due: when the sweeper must promote next; promotion: when a claim must promote next"},
    [STMT_PING] = {STMT_PING,
     STMT_ON_READER, "SELECT max(id) FROM jobs", "ping: a read connection answers"},
    [STMT_EXPORT_COUNTS] = {STMT_EXPORT_COUNTS,
     STMT_ON_EXPORT, "SELECT status, count(*) FROM jobs GROUP BY status",
     "export (jobqd migrate): the jobs per stored status, compared with the target's"},
    [STMT_EXPORT_LAST_ID] = {STMT_EXPORT_LAST_ID, STMT_ON_EXPORT,
     "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0), "
     "coalesce((SELECT max(id) FROM jobs), 0))",
     "export: the highest id ever given (AUTOINCREMENT: deleted jobs' ids are never reused)"},
    [STMT_EXPORT_ROWS] = {STMT_EXPORT_ROWS, STMT_ON_EXPORT,
     "SELECT " COLS ", lease_seconds, deadline_at FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2",
     "export: the next batch of rows, every column (SQL_EXPORT_* name the last two)"},
    [STMT_EXPORT_ATTEMPT_COUNT] = {STMT_EXPORT_ATTEMPT_COUNT, STMT_ON_EXPORT,
     "SELECT (SELECT count(*) FROM attempts) + "
     "(SELECT count(*) FROM jobs WHERE attempt_in_row IS NOT NULL)",
     "export: the attempt history entries (the latest ones that job rows hold included), "
     "compared with the target's"},
    [STMT_EXPORT_ATTEMPTS] = {STMT_EXPORT_ATTEMPTS, STMT_ON_EXPORT,
     "WITH a AS (SELECT job_id, fencing_token, attempt, worker_id, claimed_at, ended_at, "
     "outcome, error_code, error_detail FROM attempts WHERE (job_id, fencing_token) > (?1, ?2) "
     "ORDER BY job_id, fencing_token LIMIT ?3), "
     "hi AS (SELECT CASE WHEN count(*) < ?3 THEN 9223372036854775807 ELSE max(job_id) END AS id "
     "FROM a) "
     "SELECT * FROM (SELECT * FROM a UNION ALL SELECT * FROM (SELECT id, " ROW_ATTEMPT " FROM "
     "jobs WHERE id >= ?1 AND id <= (SELECT id FROM hi) AND (id > ?1 OR fencing_token > ?2) "
     "AND attempt_in_row IS NOT NULL ORDER BY id LIMIT ?3)) ORDER BY 1, 2 LIMIT ?3",
     "export: the next batch of attempt history entries, the latest ones from the job rows "
     "that hold them (a range of ids no wider than the table's batch reaches: the batches "
     "read the jobs once in all)"},
    [STMT_EXPORT_PAUSED] = {STMT_EXPORT_PAUSED, STMT_ON_EXPORT,
     "SELECT name FROM queues WHERE paused AND name > ?1 ORDER BY name LIMIT ?2",
     "export: the next names of paused queues"},
    [STMT_EXPORT_LIMITS] = {STMT_EXPORT_LIMITS, STMT_ON_EXPORT,
     EXPORT_TABLE("key, changed_at, max_running, rate_jobs, rate_per_seconds", "limits", "key",
                  "changed_at"),
     "export: the next limits (STORE_COPY_LIMITS)"},
    [STMT_EXPORT_KEYS] = {STMT_EXPORT_KEYS, STMT_ON_EXPORT,
     EXPORT_TABLE("key, paused_until", "keys", "key", "paused_until"),
     "export: the next concurrency keys' states (STORE_COPY_KEYS)"},
    [STMT_EXPORT_KEY_CLAIMS] = {STMT_EXPORT_KEY_CLAIMS, STMT_ON_EXPORT,
     EXPORT_TABLE("key, at, n", "key_claims", "key", "at"),
     "export: the next claim rows of the keys' rate windows (STORE_COPY_KEY_CLAIMS)"},
    [STMT_EXPORT_SCHEDULES] = {STMT_EXPORT_SCHEDULES, STMT_ON_EXPORT,
     EXPORT_TABLE("name, job, cron, timezone, created_at, every_seconds, catch_up, overlap, "
                  "paused, next_run_at, last_run_at, last_job_id, updated_at, rev",
                  "schedules", "name", "created_at"),
     "export: the next schedules (STORE_COPY_SCHEDULES)"},
    [STMT_EXPORT_TICKER] = {STMT_EXPORT_TICKER, STMT_ON_EXPORT,
     EXPORT_TABLE("'', seen_at", "ticker", "''", "seen_at"),
     "export: the tickers' liveness row (STORE_COPY_TICKER)"},
    [STMT_EXPORT_SQS_QUEUES] = {STMT_EXPORT_SQS_QUEUES, STMT_ON_EXPORT,
     EXPORT_TABLE("name, attributes, created_at, modified_at", "sqs_queues", "name",
                  "created_at"),
     "export: the next SQS queues (STORE_COPY_SQS_QUEUES)"},
    [STMT_EXPORT_TABLE_COUNTS] = {STMT_EXPORT_TABLE_COUNTS, STMT_ON_EXPORT,
     "SELECT (SELECT count(*) FROM limits), (SELECT count(*) FROM keys), "
     "(SELECT count(*) FROM key_claims), (SELECT count(*) FROM schedules), "
     "(SELECT count(*) FROM ticker), (SELECT count(*) FROM sqs_queues)",
     "export: the rows of each table beside the jobs (enum store_copy_table's order), "
     "compared with the target's"},
    [STMT_COUNT_ADD] = {STMT_COUNT_ADD, STMT_ON_WRITER,
     "INSERT INTO counts (queue, status, n) VALUES (?1, ?2, ?3) "
     "ON CONFLICT (queue, status) DO UPDATE SET n = n + excluded.n",
     "the writer, before a group's COMMIT: the jobs that the group's writes moved into (or "
     "out of) one queue and status, in all (sqlite_counts_write)"},
    [STMT_ATTEMPT_END] = {STMT_ATTEMPT_END, STMT_ON_WRITER,
     "INSERT INTO attempts (job_id, fencing_token, attempt, worker_id, claimed_at, ended_at, "
     "outcome, error_code, error_detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
     "fail and sweep: the attempt of a job that goes back to queued (the next claim makes its "
     "row the record of the next one)"},
    [STMT_ATTEMPT_ARCHIVE] = {STMT_ATTEMPT_ARCHIVE, STMT_ON_WRITER,
     "INSERT INTO attempts (job_id, fencing_token, attempt, worker_id, claimed_at, ended_at, "
     "outcome, error_code, error_detail) SELECT id, " ROW_ATTEMPT " FROM jobs "
     "WHERE id = ?1 AND attempt_in_row IS NOT NULL",
     "retry: the latest attempt of a failed or cancelled job, from its row into the attempts "
     "table (the retry resets attempts)"},
    [STMT_ATTEMPTS_TRIM] = {STMT_ATTEMPTS_TRIM, STMT_ON_WRITER,
     "DELETE FROM attempts WHERE job_id = ?1 AND fencing_token <= ?2 - " JOB_ATTEMPTS_KEPT_SQL,
     "claim: the attempts older than the newest JOB_ATTEMPTS_KEPT (the one starting included) "
     "go, only for a job claimed more often than that"},
    [STMT_LANE_UPSERT] = {STMT_LANE_UPSERT, STMT_ON_WRITER,
     "INSERT INTO lanes (queue, requires, ckey, check_at) VALUES (?1, ?2, ?3, ?4) "
     "ON CONFLICT (queue, requires, ckey) DO UPDATE SET check_at = min(check_at, "
     "excluded.check_at) RETURNING id",
     "enqueue of a job with requires or a concurrency key: its lane (made when new), looked "
     "at again by the next claim when the job is due (check_at 0; a later one: promotion)"},
    [STMT_LANES_ANY] = {STMT_LANES_ANY, STMT_ON_WRITER, "SELECT EXISTS (SELECT 1 FROM lanes)",
     "claim, once per writer: whether any lane exists (none: claims skip the lanes)"},
    [STMT_LANE_TOUCH] = {STMT_LANE_TOUCH, STMT_ON_WRITER,
     "UPDATE lanes SET check_at = 0 WHERE id = ?1 AND check_at <> 0",
     "promotion: a job of lane ?1 became queued (the next claim looks at its head again)"},
    [STMT_LANE_TOUCH_JOB] = {STMT_LANE_TOUCH_JOB, STMT_ON_WRITER,
     "UPDATE lanes SET check_at = 0 WHERE id = (SELECT lane FROM jobs WHERE id = ?1) "
     "AND check_at <> 0",
     "requeue, retry: job ?1 became queued again (nothing when it has no lane)"},
    [STMT_LANES_TOUCH_EMPTY] = {STMT_LANES_TOUCH_EMPTY, STMT_ON_WRITER,
     "UPDATE lanes SET check_at = 0 WHERE head_id IS NULL AND check_at <> 0",
     "promotion of jobs of more lanes than it names: every lane without a head looks again"},
    [STMT_LANES_DUE] = {STMT_LANES_DUE, STMT_ON_WRITER,
     "SELECT id FROM lanes WHERE queue = ?1 AND check_at <= ?2 LIMIT ?3",
     "claim: lanes of a queue whose head must be looked at again"},
    [STMT_LANE_BEST] = {STMT_LANE_BEST, STMT_ON_WRITER,
     "SELECT id, priority, run_at FROM jobs WHERE lane = ?1 AND status = " QUEUED
     " AND " NOT_EXPIRED("?2") " ORDER BY priority DESC, run_at, id LIMIT 1",
     "claim: the best queued job of a lane (its head)"},
    [STMT_LANE_HEAD] = {STMT_LANE_HEAD, STMT_ON_WRITER,
     "UPDATE lanes SET head_id = ?2, head_priority = ?3, head_run_at = ?4, check_at = ?5 "
     "WHERE id = ?1",
     "claim: a lane's head as just looked at (NULLs: the lane has no queued job)"},
    [STMT_LANES_OPEN] = {STMT_LANES_OPEN, STMT_ON_WRITER,
     "SELECT id, ckey, head_id, head_priority, head_run_at FROM lanes WHERE queue = ?1 "
     "AND head_id IS NOT NULL AND open_at <= ?2 AND (requires = '' OR (?3 IS NOT NULL AND "
     "NOT EXISTS (SELECT 1 FROM json_each(lanes.requires) AS r "
     "WHERE r.value NOT IN (SELECT value FROM json_each(?3))))) "
     "ORDER BY head_priority DESC, head_run_at, head_id LIMIT ?4",
     "claim: the open lanes of a queue with a head whose requires fit the capabilities ?3, "
     "best head first (one row per lane, however many jobs a closed key holds)"},
    [STMT_KEY_LIMITS] = {STMT_KEY_LIMITS, STMT_ON_WRITER | STMT_ON_READER,
     "SELECT key, max_running, rate_jobs, rate_per_seconds FROM limits "
     "WHERE key IN (SELECT value FROM json_each(?1))",
     "claim: the limits that may apply to a key (its own and the patterns of its prefixes, "
     "?1 a JSON array of them; limit_resolve chooses)"},
    [STMT_KEY_RUNNING] = {STMT_KEY_RUNNING, STMT_ON_WRITER | STMT_ON_READER,
     "SELECT count(*) FROM jobs WHERE concurrency_key = ?1 AND status = " RUNNING,
     "claim: the jobs of a key running now"},
    [STMT_KEY_WINDOW] = {STMT_KEY_WINDOW, STMT_ON_WRITER,
     "SELECT coalesce(sum(n), 0) FROM key_claims WHERE key = ?1 AND at >= ?2",
     "claim: the claims of a key its rate counts now"},
    [STMT_KEY_NEWEST] = {STMT_KEY_NEWEST,
     STMT_ON_WRITER, "SELECT max(at) FROM key_claims WHERE key = ?1",
     "claim: the newest second a key counts a claim in (NULL: none), for limit_claim_second"},
    [STMT_KEY_WINDOW_ROWS] = {STMT_KEY_WINDOW_ROWS, STMT_ON_WRITER,
     "SELECT at, n FROM key_claims WHERE key = ?1 AND at >= ?2",
     "claim: the claim rows of a key's window, when the key closes (limit_open_at)"},
    [STMT_KEY_CLAIMED] = {STMT_KEY_CLAIMED, STMT_ON_WRITER,
     "INSERT INTO key_claims (key, at, n) VALUES (?1, ?2, ?3) "
     "ON CONFLICT (key, at) DO UPDATE SET n = n + excluded.n",
     "claim: n more claims of a rate-limited key in second ?2"},
    [STMT_KEY_CLAIMS_PRUNE] = {STMT_KEY_CLAIMS_PRUNE, STMT_ON_WRITER,
     "DELETE FROM key_claims WHERE key = ?1 AND at < ?2",
     "claim: the claim rows of a key its window no longer counts"},
    [STMT_KEY_CLOSE] = {STMT_KEY_CLOSE, STMT_ON_WRITER,
     "UPDATE lanes SET open_at = ?2 WHERE ckey = ?1 RETURNING queue",
     "claim: a key without room closes its lanes until ?2 (limit_open_at)"},
    [STMT_KEY_REOPEN] = {STMT_KEY_REOPEN, STMT_ON_WRITER,
     "UPDATE lanes SET open_at = 0 WHERE ckey = ?1 AND open_at = " LANE_NEVER_SQL
     " RETURNING queue, requires = ''",
     "the end of a running job of a key: the lanes it closed for max_running open again"},
    [STMT_KEYS_OPENED] = {STMT_KEYS_OPENED, STMT_ON_WRITER,
     "SELECT DISTINCT queue FROM lanes WHERE ckey <> '' AND open_at >= ?1 AND open_at <= ?2",
     "sweep: the queues of keyed lanes that opened in [?1, ?2] (a rate window freed a slot, a "
     "pause ended), whose parked claims look again"},
    [STMT_LANES_WINDOW] = {STMT_LANES_WINDOW, STMT_ON_WRITER,
     "SELECT max(id), count(*) FROM (SELECT id FROM lanes WHERE id > ?1 ORDER BY id LIMIT ?2)",
     "sweep: the last id and the number of the next ?2 lanes after lane ?1 (the lanes it looks "
     "at)"},
    [STMT_LANES_DROP] = {STMT_LANES_DROP, STMT_ON_WRITER,
     "DELETE FROM lanes WHERE id > ?1 AND id <= ?2 AND NOT EXISTS (SELECT 1 FROM jobs "
     "WHERE jobs.lane = lanes.id)",
     "sweep: the lanes in (?1, ?2] that no job of any status references go (jobs_lane_any); a "
     "job keeps its lane id, so a lane with a job is never dropped"},
    [STMT_KEY_CLAIMS_EXPIRE] = {STMT_KEY_CLAIMS_EXPIRE, STMT_ON_WRITER,
     "DELETE FROM key_claims WHERE (key, at) IN (SELECT key, at FROM key_claims WHERE at < ?1 "
     "ORDER BY at LIMIT ?2)",
     "sweep: at most ?2 claim rows of any key older than every window (limit_claims_oldest; "
     "key_claims_at)"},
    [STMT_DEDUP_ACTIVE] = {STMT_DEDUP_ACTIVE, STMT_ON_WRITER,
     "SELECT " COLS ", status FROM jobs WHERE queue = ?1 AND dedup_key = ?2 AND " DEDUP_LIVE
     " ORDER BY id DESC LIMIT 1",
     "enqueue, dedup active: the newest unfinished job of the key (jobs_dedup_live)"},
    [STMT_DEDUP_WINDOW] = {STMT_DEDUP_WINDOW, STMT_ON_WRITER,
     "SELECT " COLS ", status FROM jobs WHERE queue = ?1 AND dedup_key = ?2 "
     "ORDER BY id DESC LIMIT 1",
     "enqueue, dedup window: the newest job of the key (one probe of jobs_dedup), which "
     "dedup_decide checks against the window: a key's jobs are created in id order"},
    [STMT_DEDUP_DEBOUNCE] = {STMT_DEDUP_DEBOUNCE, STMT_ON_WRITER,
     "SELECT " COLS ", status FROM jobs WHERE queue = ?1 AND dedup_key = ?2 AND " DEDUP_LIVE
     " AND status IN (" SCHEDULED ", " QUEUED ") AND claimed_at IS NULL "
     "ORDER BY id DESC LIMIT 1",
     "enqueue, dedup debounce: the newest queued job of the key never claimed "
     "(jobs_dedup_live)"},
    [STMT_DEDUP_REPLACE] = {STMT_DEDUP_REPLACE, STMT_ON_WRITER,
     "UPDATE jobs SET payload = ?2, run_at = ?3, status = ?4 WHERE id = ?1 AND status IN "
     "(" SCHEDULED ", " QUEUED ") AND claimed_at IS NULL",
     "enqueue, dedup debounce: the job found gets the new payload and run_at (scheduled or "
     "queued by when it is due)"},
    [STMT_DEP_MARK] = {STMT_DEP_MARK, STMT_ON_WRITER,
     "UPDATE jobs SET has_dependents = 1 WHERE id = ?1 RETURNING status",
     "enqueue with depends_on: a dependency exists, is marked as waited for, and its status"},
    [STMT_DEP_EDGE] = {STMT_DEP_EDGE, STMT_ON_WRITER,
     "INSERT INTO deps (dep_id, job_id, settled) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
     "enqueue with depends_on: one edge"},
    [STMT_DEP_JOB_SET] = {STMT_DEP_JOB_SET, STMT_ON_WRITER,
     "UPDATE jobs SET depends_on = ?2, on_dep_failure = ?3, deps_pending = ?4, error_code = ?5, "
     "error_detail = ?6, finished_at = ?7 WHERE id = ?1",
     "enqueue with depends_on: the new job's dependency columns (and its end when cancelled)"},
    [STMT_DEP_SETTLE] = {STMT_DEP_SETTLE, STMT_ON_WRITER,
     "UPDATE deps SET settled = 1 WHERE dep_id = ?1 AND settled = 0 RETURNING job_id",
     "a job's end: its unsettled edges, and the dependents they lead to"},
    [STMT_DEP_UNSETTLE] = {STMT_DEP_UNSETTLE, STMT_ON_WRITER,
     "UPDATE deps SET settled = 0 WHERE dep_id = ?1 AND settled = 1 RETURNING job_id",
     "a job's retry: its settled edges come back, and the dependents they lead to"},
    [STMT_DEP_PENDING] = {STMT_DEP_PENDING, STMT_ON_WRITER,
     "UPDATE jobs SET deps_pending = deps_pending + ?2 WHERE id = ?1 AND status = " BLOCKED
     " RETURNING deps_pending",
     "a dependency settled (-1) or came back (+1): a blocked job's unsettled edges"},
    [STMT_DEP_RELEASE] = {STMT_DEP_RELEASE, STMT_ON_WRITER,
     "UPDATE jobs SET status = ?2, run_at = ?3, deps_pending = 0 WHERE id = ?1 AND status = "
     BLOCKED,
     "a blocked job's last dependency settled: queued (or scheduled) at its release run_at"},
    [STMT_DEP_CANCEL] = {STMT_DEP_CANCEL, STMT_ON_WRITER,
     "UPDATE jobs SET status = " CANCELLED ", finished_at = ?2, error_code = ?3, error_detail = "
     "?4, deps_pending = 0 WHERE id = ?1 AND status = " BLOCKED,
     "a dependency failed: the blocked dependent is cancelled (dependency_failed)"},
    [STMT_DEP_PARENTS] = {STMT_DEP_PARENTS, STMT_ON_WRITER,
     "SELECT d.dep_id, j.status FROM deps d LEFT JOIN jobs j ON j.id = d.dep_id "
     "WHERE d.job_id = ?1 ORDER BY d.dep_id",
     "retry: a dependent cancelled because of the retried job looks at its dependencies again"},
    [STMT_DEP_EDGE_SET] = {STMT_DEP_EDGE_SET, STMT_ON_WRITER,
     "UPDATE deps SET settled = ?3 WHERE dep_id = ?1 AND job_id = ?2",
     "retry: one edge of a re-evaluated dependent, settled as its dependency is now"},
    [STMT_DEP_DETAIL] = {STMT_DEP_DETAIL,
     STMT_ON_WRITER, "UPDATE jobs SET error_detail = ?2 WHERE id = ?1",
     "retry: a dependent that stays cancelled names the dependency that cancels it now"},
    [STMT_DEP_PIN] = {STMT_DEP_PIN, STMT_ON_WRITER,
     "UPDATE jobs SET error_detail = ?2 WHERE id IN (SELECT job_id FROM deps WHERE dep_id = ?1) "
     "AND status = " CANCELLED " AND error_code = ?3 AND (?4 >> on_dep_failure) & 1 AND "
     "error_detail <> ?2",
     "purge: the dependents of a purged job that its end cancels (?4: bit per mode, "
     "depend_modes) and another dependency cancelled name it from now on (it never comes "
     "back: a retry of the other leaves them cancelled)"},
    [STMT_DEP_BLOCK] = {STMT_DEP_BLOCK, STMT_ON_WRITER,
     "UPDATE jobs SET status = " BLOCKED ", deps_pending = ?2, error_code = NULL, "
     "error_detail = NULL, finished_at = NULL WHERE id = ?1",
     "retry: a re-evaluated dependent, or the retried job itself, waits again"},
    [STMT_DEP_WAITING] = {STMT_DEP_WAITING, STMT_ON_WRITER,
     "SELECT count(*) FROM deps d JOIN jobs j ON j.id = d.dep_id WHERE d.job_id = ?1 AND "
     "j.status NOT IN (" SUCCEEDED ", " FAILED ", " CANCELLED ")",
     "retry: the dependencies of the retried job that have not ended"},
    [STMT_DEP_EDGES_RESET] = {STMT_DEP_EDGES_RESET, STMT_ON_WRITER,
     "UPDATE deps SET settled = coalesce((SELECT status IN (" SUCCEEDED ", " FAILED ", "
     CANCELLED ") FROM jobs WHERE id = deps.dep_id), 1) WHERE job_id = ?1",
     "retry: the edges of the retried job, settled as their dependencies are now"},
    [STMT_DEP_TODO_MARK] = {STMT_DEP_TODO_MARK,
     STMT_ON_WRITER, "UPDATE jobs SET deps_todo = ?2 WHERE id = ?1",
     "a walk down a graph past its bound: the job whose dependents the sweep visits (1), or "
     "visited (0)"},
    [STMT_DEP_TODO_PICK] = {STMT_DEP_TODO_PICK, STMT_ON_WRITER,
     "SELECT id FROM jobs WHERE deps_todo = 1 ORDER BY id LIMIT ?1",
     "sweep: the jobs whose dependents a write left for it (jobs_deps_todo)"},
    [STMT_LINKS_DEPS] = {STMT_LINKS_DEPS, STMT_ON_READER,
     "SELECT j.id, j.status, j.result, j.queue FROM deps d JOIN jobs j ON j.id = d.dep_id "
     "WHERE d.job_id = ?1 ORDER BY j.id LIMIT ?2",
     "dependencies: the jobs a job depends on"},
    [STMT_LINKS_DEPENDENTS] = {STMT_LINKS_DEPENDENTS, STMT_ON_READER,
     "SELECT j.id, j.status, j.result, j.queue FROM deps d JOIN jobs j ON j.id = d.job_id "
     "WHERE d.dep_id = ?1 ORDER BY d.job_id LIMIT ?2",
     "dependents: the jobs that depend on a job"},
    [STMT_SCHEDULES_ALL] = {STMT_SCHEDULES_ALL, STMT_ON_READER,
     "SELECT " SQL_SCHEDULE_COLUMNS " FROM schedules ORDER BY name",
     "schedules read (GET /schedules): every schedule by name"},
    [STMT_SCHEDULE_GET] = {STMT_SCHEDULE_GET, STMT_ON_READER | STMT_ON_WRITER,
     "SELECT " SQL_SCHEDULE_COLUMNS " FROM schedules WHERE name = ?1",
     "schedules read of one name (GET /schedules/{name}); schedule delete: the row it deletes"},
    [STMT_SCHEDULES_NEXT] = {STMT_SCHEDULES_NEXT, STMT_ON_READER,
     "SELECT " SQL_SCHEDULE_COLUMNS " FROM schedules WHERE next_run_at IS NOT NULL "
     "ORDER BY next_run_at, name LIMIT ?1",
     "schedules next (the ticker): the unpaused schedules that tick soonest"},
    [STMT_SCHEDULES_COUNT] = {STMT_SCHEDULES_COUNT,
     STMT_ON_READER, "SELECT count(*) FROM schedules",
     "schedules count (/metrics)"},
    [STMT_SCHEDULE_OLD_NEXT] = {STMT_SCHEDULE_OLD_NEXT,
     STMT_ON_WRITER, "SELECT next_run_at FROM schedules WHERE name = ?1",
     "schedule put: the next_run_at it replaces (a due tick it keeps: schedule_put_next)"},
    [STMT_SCHEDULE_PUT] = {STMT_SCHEDULE_PUT, STMT_ON_WRITER,
     "INSERT INTO schedules (name, job, cron, every_seconds, timezone, catch_up, overlap, "
     "paused, next_run_at, created_at, updated_at, rev) "
     "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?12 "
     "WHERE EXISTS (SELECT 1 FROM schedules WHERE name = ?1) "
     "OR (SELECT count(*) FROM schedules) < ?11 "
     "ON CONFLICT (name) DO UPDATE SET job = excluded.job, cron = excluded.cron, "
     "every_seconds = excluded.every_seconds, timezone = excluded.timezone, "
     "catch_up = excluded.catch_up, overlap = excluded.overlap, paused = excluded.paused, "
     "next_run_at = excluded.next_run_at, updated_at = excluded.updated_at, rev = rev + 1 "
     "RETURNING " SQL_SCHEDULE_COLUMNS,
     "schedule put: create (rev ?12) or replace a schedule, keeping its runs; no row: a new "
     "name past ?11 schedules"},
    [STMT_SCHEDULE_DELETE] = {STMT_SCHEDULE_DELETE,
     STMT_ON_WRITER, "DELETE FROM schedules WHERE name = ?1",
     "schedule delete"},
    [STMT_SCHEDULE_CAS] = {STMT_SCHEDULE_CAS, STMT_ON_WRITER,
     "UPDATE schedules SET next_run_at = ?4, rev = rev + 1 WHERE name = ?1 AND rev = ?2 "
     "AND next_run_at = ?3 AND paused = 0 RETURNING last_job_id",
     "schedule tick: move next_run_at on if the row is still the one the ticker read"},
    [STMT_SCHEDULE_RAN] = {STMT_SCHEDULE_RAN, STMT_ON_WRITER,
     "UPDATE schedules SET last_run_at = ?2, last_job_id = ?3 WHERE name = ?1",
     "schedule tick: the tick's job"},
    [STMT_JOB_STATUS] = {STMT_JOB_STATUS, STMT_ON_WRITER, "SELECT status FROM jobs WHERE id = ?1",
     "schedule tick with overlap skip: the status of the previous tick's job"},
    [STMT_TICKER_SEEN] = {STMT_TICKER_SEEN,
     STMT_ON_WRITER, "SELECT seen_at, stopped_at FROM ticker WHERE id = 1",
     "schedule pass: the last pass of any ticker and the clean stop marked after it"},
    [STMT_TICKER_PASS] = {STMT_TICKER_PASS, STMT_ON_WRITER,
     "INSERT INTO ticker (id, seen_at) VALUES (1, ?1) "
     "ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, stopped_at = NULL",
     "schedule pass: this pass is the last, and no ticker has stopped since"},
    [STMT_TICKER_STOP] = {STMT_TICKER_STOP,
     STMT_ON_WRITER, "UPDATE ticker SET stopped_at = ?1 WHERE id = 1",
     "schedule stop: a ticker stopped cleanly at ?1 (the ticks after it come due unseen)"},
    [STMT_EVENT_ADD] = {STMT_EVENT_ADD, STMT_ON_WRITER,
     "INSERT OR FAIL INTO events (type, at, job_id, queue, status, attempts, fencing_token, "
     "error_code, concurrency_key, traceparent) SELECT ?2, ?3, id, queue, ?4, attempts, "
     "fencing_token, error_code, concurrency_key, traceparent FROM jobs WHERE id = ?1",
     "the writer, after each write of a group: the event of one change of job ?1 (type ?2, "
     "API status ?4), its other fields as the write left the row (sqlite_events_write). OR "
     "FAIL: at most one row, so nothing to undo on failure, and SQLite keeps no statement "
     "journal for it (an INSERT ... SELECT that may ABORT copies each page it changes)"},
    [STMT_EVENTS_READ] = {STMT_EVENTS_READ, STMT_ON_READER,
     "SELECT seq, type, at, job_id, queue, status, attempts, fencing_token, error_code, "
     "concurrency_key, traceparent FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
     "events read: the events after seq ?1, at most ?2 (the filters are applied to them)"},
    [STMT_EVENTS_KEPT] = {STMT_EVENTS_KEPT,
     STMT_ON_READER, "SELECT pruned_through FROM events_kept WHERE id = 1",
     "events read: the highest seq deleted (a cursor below it gets a gap)"},
    [STMT_EVENTS_BOUNDS] = {STMT_EVENTS_BOUNDS, STMT_ON_WRITER,
     "SELECT coalesce((SELECT min(seq) FROM events), 0), "
     "coalesce((SELECT max(seq) FROM events), 0)",
     "sweep events: the oldest and newest seq (seq is dense here: max - min + 1 events); "
     "two subqueries, as SQLite reads one end of the rowid for a lone min or max and scans "
     "the whole log for both in one query"},
    [STMT_EVENTS_PRUNE] = {STMT_EVENTS_PRUNE, STMT_ON_WRITER,
     "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE seq < ?3 "
     "ORDER BY seq LIMIT ?2) AND (at < ?1 OR seq <= ?4) RETURNING seq",
     "sweep events: of the ?2 oldest events but the newest (?3), those before the cutoff ?1 "
     "or at or below ?4 (over the count bound)"},
    [STMT_EVENTS_PRUNED] = {STMT_EVENTS_PRUNED, STMT_ON_WRITER,
     "UPDATE events_kept SET pruned_through = max(pruned_through, ?1) WHERE id = 1",
     "sweep events: the highest seq deleted so far"},
    [STMT_SQS_QUEUE_GET] = {STMT_SQS_QUEUE_GET, STMT_ON_READER | STMT_ON_WRITER,
     "SELECT name, attributes, created_at, modified_at FROM sqs_queues WHERE name = ?1",
     "sqs queues read of one name; sqs queue put: the row as stored"},
    [STMT_SQS_QUEUES_LIST] = {STMT_SQS_QUEUES_LIST, STMT_ON_READER,
     "SELECT name, attributes, created_at, modified_at FROM sqs_queues "
     "WHERE name > ?2 AND substr(name, 1, length(?1)) = ?1 ORDER BY name LIMIT ?3",
     "sqs queues read of a prefix (ListQueues), after a name"},
    [STMT_SQS_QUEUE_INSERT] = {STMT_SQS_QUEUE_INSERT, STMT_ON_WRITER,
     "INSERT INTO sqs_queues (name, attributes, created_at, modified_at) VALUES (?1, ?2, ?3, ?3) "
     "ON CONFLICT (name) DO NOTHING",
     "sqs queue put (create): the new row, nothing when it exists"},
    [STMT_SQS_QUEUE_MERGE] = {STMT_SQS_QUEUE_MERGE, STMT_ON_WRITER,
     "UPDATE sqs_queues SET attributes = json_patch(attributes, ?2), modified_at = ?3 "
     "WHERE name = ?1",
     "sqs queue put (merge): the attributes given replace the stored ones"},
    [STMT_SQS_QUEUE_DELETE] = {STMT_SQS_QUEUE_DELETE,
     STMT_ON_WRITER, "DELETE FROM sqs_queues WHERE name = ?1",
     "sqs queue delete"},
    [STMT_WEBHOOK_GET] = {STMT_WEBHOOK_GET, STMT_ON_READER | STMT_ON_WRITER,
     "SELECT " SQL_WEBHOOK_COLUMNS ", (SELECT count(*) FROM webhook_parked p "
     "WHERE p.name = webhooks.name) FROM webhooks WHERE name = ?1",
     "webhooks read of one name (with its count of parked events); webhook put, lease and "
     "done: does it exist"},
    [STMT_WEBHOOKS_ALL] = {STMT_WEBHOOKS_ALL, STMT_ON_READER,
     "SELECT " SQL_WEBHOOK_COLUMNS ", (SELECT count(*) FROM webhook_parked p "
     "WHERE p.name = webhooks.name) FROM webhooks ORDER BY name",
     "webhooks read of every subscription (GET /webhooks, a delivery pass)"},
    [STMT_WEBHOOK_PUT] = {STMT_WEBHOOK_PUT, STMT_ON_WRITER,
     "INSERT INTO webhooks (name, url, types, queues, secret, enabled, ordered, created_at, "
     "updated_at, delivered_seq) "
     "SELECT ?1, ?2, ?3, ?4, coalesce(?5, ?6), ?7, ?8, ?9, ?9, "
     "(SELECT coalesce(max(seq), 0) FROM events) "
     "WHERE EXISTS (SELECT 1 FROM webhooks WHERE name = ?1) "
     "OR (SELECT count(*) FROM webhooks) < ?11 "
     "ON CONFLICT (name) DO UPDATE SET url = excluded.url, types = excluded.types, "
     "queues = excluded.queues, "
     "prev_secret = CASE WHEN ?5 IS NOT NULL AND ?5 <> secret THEN secret ELSE prev_secret END, "
     "prev_until = CASE WHEN ?5 IS NOT NULL AND ?5 <> secret THEN ?10 ELSE prev_until END, "
     "secret = coalesce(?5, secret), enabled = excluded.enabled, ordered = excluded.ordered, "
     "disabled_reason = CASE WHEN excluded.enabled THEN NULL ELSE disabled_reason END, "
     "failing_since = CASE WHEN excluded.enabled AND NOT enabled THEN NULL "
     "ELSE failing_since END, "
     "next_attempt_at = CASE WHEN excluded.enabled AND NOT enabled THEN NULL "
     "ELSE next_attempt_at END, "
     "attempts = CASE WHEN excluded.enabled AND NOT enabled THEN 0 ELSE attempts END, "
     "updated_at = ?9 RETURNING " SQL_WEBHOOK_COLUMNS,
     "webhook put: create (secret ?5 or ?6, after the newest event) or replace a subscription "
     "(a new secret ?5 keeps the old one until ?10); no row: a new name past ?11"},
    [STMT_WEBHOOK_DELETE] = {STMT_WEBHOOK_DELETE, STMT_ON_WRITER,
     "DELETE FROM webhooks WHERE name = ?1 RETURNING " SQL_WEBHOOK_COLUMNS,
     "webhook delete"},
    [STMT_WEBHOOK_LEASE] = {STMT_WEBHOOK_LEASE, STMT_ON_WRITER,
     "UPDATE webhooks SET lease_token = ?2, lease_until = ?3 WHERE name = ?1 AND enabled "
     "AND (lease_until IS NULL OR lease_until <= ?4) "
     "AND (next_attempt_at IS NULL OR next_attempt_at <= ?4) RETURNING " SQL_WEBHOOK_COLUMNS,
     "webhook lease: the compare and swap that takes a free, due subscription's lease"},
    [STMT_WEBHOOK_DONE] = {STMT_WEBHOOK_DONE, STMT_ON_WRITER,
     "UPDATE webhooks SET delivered_seq = ?4, failing_since = ?5, next_attempt_at = ?6, "
     "attempts = ?7, last_status = ?8, last_error = ?9, last_attempt_at = ?10, "
     "deliveries = ?11, failures = ?12, failed_events = ?13, enabled = enabled AND ?14, "
     "disabled_reason = CASE WHEN ?14 THEN disabled_reason ELSE ?15 END, retry_at = ?16, "
     "lease_token = NULL, lease_until = NULL "
     "WHERE name = ?1 AND lease_token = ?2 AND lease_until > ?3 RETURNING " SQL_WEBHOOK_COLUMNS,
     "webhook done: an attempt's delivery state, under the lease it re-checks (token ?2, "
     "deadline after now ?3), which it ends"},
    [STMT_WEBHOOK_PARKED] = {STMT_WEBHOOK_PARKED, STMT_ON_WRITER,
     "SELECT seq, job_id, attempts, failing_since, next_attempt_at FROM webhook_parked "
     "WHERE name = ?1 ORDER BY seq LIMIT ?2",
     "webhook lease: the subscription's parked events, for its holder"},
    [STMT_WEBHOOK_PARK] = {STMT_WEBHOOK_PARK, STMT_ON_WRITER,
     "INSERT OR REPLACE INTO webhook_parked (name, seq, job_id, attempts, failing_since, "
     "next_attempt_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
     "webhook done: park an event, or write a parked event's retry state"},
    [STMT_WEBHOOK_UNPARK] = {STMT_WEBHOOK_UNPARK, STMT_ON_WRITER,
     "DELETE FROM webhook_parked WHERE name = ?1 AND seq = ?2",
     "webhook done: a parked event delivered or given up"},
    [STMT_WEBHOOK_UNPARK_ALL] = {STMT_WEBHOOK_UNPARK_ALL, STMT_ON_WRITER,
     "DELETE FROM webhook_parked WHERE name = ?1", "webhook delete: its parked events"},
};
/* clang-format on */

const struct stmt_def *sqlite_stmt_def(enum stmt_id id)
{
    assert((unsigned)id < STMT_COUNT);
    assert(stmts[id].id == id);
    return &stmts[id];
}

const char *sqlite_stmt_sql(enum stmt_id id)
{
    return sqlite_stmt_def(id)->sql;
}
