#include "pg_stmt.h"

#include <assert.h>

#include "job.h"
#include "pg_lanes.h"
#include "pg_row.h"
#include "pg_stmt_parts.h"
#include "pg_stmt_sqs.h"
#include "pg_stmt_webhook.h"

/* clang-format off */
static const struct pg_stmt_def stmts[PG_STMT_COUNT] = {
    [PG_JOB_GET] = {PG_JOB_GET,
     "job_get", "SELECT " COLS " FROM jobq_jobs j WHERE j.id = $1::bigint",
     "get; every write: not_found vs lease_lost or conflict after a guarded update missed"},
    [PG_JOB_BY_KEY] = {PG_JOB_BY_KEY, "job_by_key",
     "SELECT " COLS " FROM jobq_jobs j WHERE j.queue = $1::text AND j.idempotency_key = $2::text",
     "enqueue: the existing job of an idempotency_key hit"},
    [PG_JOB_INSERT] = {PG_JOB_INSERT, "job_insert",
     "WITH e AS MATERIALIZED (SELECT coalesce(u.gid, nextval((SELECT "
     "pg_get_serial_sequence('jobq_jobs', 'id')::regclass))) AS id, u.* "
     "FROM unnest($1::text[], $2::text[], $3::integer[], $4::bigint[], $5::integer[], "
     "$6::bigint[], $7::text[], $8::text[], $10::text[], $11::bigint[], $12::text[], "
     "$13::smallint[], $14::bigint[], $15::text[], $16::text[], $17::bigint[], "
     "$18::smallint[], $19::text[], $20::smallint[], $21::integer[], $22::boolean[], "
     "$23::text[], $24::text[], $25::bigint[]) "
     "WITH ORDINALITY "
     "AS u(queue, payload, priority, run_at, max_attempts, runtime, requires, ikey, ckey, "
     "expires_at, dkey, dmode, dseconds, tp, ts, gid, status, deps, odf, pending, has_deps, "
     "ecode, edetail, fin, ord) "
     "ORDER BY u.ord), "
     "ln AS (INSERT INTO jobq_lanes AS l (queue, requires, ckey, check_at) "
     "SELECT e.queue, coalesce(e.requires, ''), coalesce(e.ckey, ''), min(e.run_at) FROM e "
     "WHERE e.requires IS NOT NULL OR e.ckey IS NOT NULL GROUP BY 1, 2, 3 "
     "ON CONFLICT (queue, requires, ckey) DO UPDATE SET check_at = "
     "least(l.check_at, excluded.check_at) RETURNING l.id, l.queue, l.requires, l.ckey), "
     "n AS (INSERT INTO jobq_jobs AS j (id, queue, status, payload, priority, run_at, "
     "max_attempts, max_runtime_seconds, requires, idempotency_key, created_at, "
     "concurrency_key, expires_at, dedup_key, dedup_mode, dedup_seconds, lane, depends_on, "
     "on_dep_failure, deps_pending, has_dependents, error_code, error_detail, finished_at, "
     "traceparent, tracestate) "
     "SELECT e.id, e.queue, coalesce(e.status, " QUEUED "), e.payload, e.priority, e.run_at, "
     "e.max_attempts, e.runtime, CASE WHEN e.requires IS NULL THEN NULL ELSE "
     "ARRAY(SELECT json_array_elements_text(e.requires::json)) END, e.ikey, $9::bigint, "
     "e.ckey, e.expires_at, e.dkey, e.dmode, e.dseconds, ln.id, e.deps, coalesce(e.odf, 0), "
     "coalesce(e.pending, 0), coalesce(e.has_deps, false), e.ecode, e.edetail, e.fin, e.tp, "
     "e.ts FROM e LEFT JOIN ln ON ln.queue = e.queue AND ln.requires = coalesce(e.requires, '') "
     "AND ln.ckey = coalesce(e.ckey, '') ORDER BY e.ord "
     "ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING "
     "RETURNING j.*) "
     "SELECT " COLS ", e.ord FROM n AS j JOIN e ON e.id = j.id",
     "enqueue: insert jobs, one per element of the arrays, in their order (ids drawn in that "
     "order); each row names its element (ord, the last column: RETURNING promises no order); "
     "an idempotency_key hit inserts nothing and returns no row; a job with requires or a "
     "concurrency key goes into its lane (made when new, looked at again from its run_at). "
     "A batch with dependencies (pg_enqueue_deps.c) also gives each job its id (drawn before, "
     "PG_JOB_IDS), its status and its dependency columns ($17..$25); else they are NULL. $15, $16: the trace context"},
    [PG_JOB_IDS] = {PG_JOB_IDS, "job_ids",
     "SELECT nextval((SELECT pg_get_serial_sequence('jobq_jobs', 'id')::regclass)) FROM "
     "generate_series(1, $1::integer)",
     "enqueue of a batch with dependencies: the ids of its new jobs, drawn before the insert"},
    [PG_JOB_BY_KEYS] = {PG_JOB_BY_KEYS, "job_by_keys",
     "SELECT " COLS ", u.ord FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS "
     "u(queue, ikey, ord) JOIN jobq_jobs j ON j.queue = u.queue AND j.idempotency_key = u.ikey",
     "enqueue of a batch with dependencies: the existing jobs of its idempotency keys, each "
     "naming its element of the arrays (ord, the last column)"},
    [PG_CLAIM] = {PG_CLAIM, "claim",
     "WITH picked AS MATERIALIZED (SELECT c.id, c.priority, c.run_at FROM (SELECT u.name FROM "
     "unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM jobq_queues p WHERE "
     "p.name = u.name AND p.paused)) AS q CROSS JOIN LATERAL "
     "(SELECT id, priority, run_at FROM jobq_jobs WHERE " CLAIM_DUE("q.name") " "
     "ORDER BY priority DESC, run_at, id LIMIT $4::integer FOR UPDATE SKIP LOCKED) AS c "
     "ORDER BY c.priority DESC, c.run_at, c.id LIMIT $4::integer), " CLAIM_TAKE("l.queue = ANY ($1::text[])"),
     "claim: the best due jobs of the queues that are not paused whose requires fit the "
     "capabilities, locked with SKIP LOCKED (claimers never wait on each other's rows), then "
     "taken in one update; the n-th best (its place, the last column) gets the n-th token, lease "
     "and worker id of the arrays (several claims of the same queues share one statement)"},
    [PG_CLAIM_ONE_QUEUE] = {PG_CLAIM_ONE_QUEUE, "claim_one_queue",
     "WITH picked AS MATERIALIZED (SELECT id, priority, run_at FROM jobq_jobs WHERE "
     CLAIM_DUE("$1::text") " AND NOT EXISTS (SELECT 1 FROM jobq_queues p WHERE p.name = "
     "$1::text AND p.paused) ORDER BY priority DESC, run_at, id LIMIT $4::integer "
     "FOR UPDATE SKIP LOCKED), " CLAIM_TAKE("l.queue = $1::text"),
     "claim: as PG_CLAIM for one queue ($1 its name): a plan that costs a third less to make"},
    [PG_HEARTBEAT] = {PG_HEARTBEAT, "heartbeat",
     HEARTBEAT_SET("u.lease", "u.has_progress", "u.progress")
     "FROM unnest($1::bigint[], $2::text[], $4::bigint[], $5::boolean[], $6::text[]) "
     "WITH ORDINALITY AS u(id, token, lease, has_progress, progress, ord) "
     "WHERE " LIVE_LEASE("u.id", "u.token") " RETURNING " COLS ", u.ord",
     "heartbeat: several calls (arrays of ids, tokens, leases, progress); ord (the last "
     "column) says which element of the arrays a row answers"},
    [PG_HEARTBEAT_ONE] = {PG_HEARTBEAT_ONE, "heartbeat_one",
     HEARTBEAT_SET("$4::bigint", "$5::boolean", "$6::text")
     "WHERE " LIVE_LEASE("$1::bigint", "$2::text") " RETURNING " COLS ", 1",
     "heartbeat: one call, as PG_HEARTBEAT with scalars (a plan by the primary key that is "
     "made once; the arrays' plan depends on their length and is made at every run)"},
    [PG_COMPLETE] = {PG_COMPLETE, "complete",
     COMPLETE_SET("u.result")
     "FROM unnest($1::bigint[], $2::text[], $4::text[]) WITH ORDINALITY "
     "AS u(id, token, result, ord) "
     "WHERE " LIVE_LEASE("u.id", "u.token") " AND NOT j.has_dependents RETURNING " COLS ", u.ord",
     "complete: several calls (arrays of ids, tokens, results); ord (the last column) says "
     "which element of the arrays a row answers"},
    [PG_COMPLETE_ONE] = {PG_COMPLETE_ONE, "complete_one",
     COMPLETE_SET("$4::text") "WHERE " LIVE_LEASE("$1::bigint", "$2::text")
     " AND NOT j.has_dependents RETURNING " COLS ", 1",
     "complete: one call, as PG_COMPLETE with scalars"},
    [PG_COMPLETE_DEPS] = {PG_COMPLETE_DEPS, "complete_deps",
     COMPLETE_SET("$4::text") "WHERE " LIVE_LEASE("$1::bigint", "$2::text") " RETURNING " COLS,
     "complete of a job some job depends on (PG_COMPLETE passes it by: a job with dependents "
     "completes in a transaction of its own, which then settles them on a later snapshot)"},
    [PG_LEASE_LOCK] = {PG_LEASE_LOCK, "lease_lock",
     "SELECT j.attempts, j.max_attempts, j.concurrency_key IS NOT NULL, j.concurrency_key, "
     "j.created_at, " DEAD_LETTER_COLS " FROM jobq_jobs j WHERE "
     LIVE_LEASE("$1::bigint", "$2::text") " FOR UPDATE OF j",
     "fail and snooze: lock the row while its lease is live; the attempts decide requeue or "
     "failed (or what a snooze undoes), whether the job has a concurrency key, the key and "
     "created_at (job_requeue_at), its queue's dead-letter policy (job_dead_letter)"},
    [PG_LEASE_END] = {PG_LEASE_END, "lease_end",
     "UPDATE jobq_jobs j SET status = $2::smallint, run_at = coalesce($3::bigint, j.run_at), "
     "finished_at = $4::bigint, error_code = $5::text, error_detail = $6::text, "
     "lease_token = NULL, lease_expires_at = NULL, deadline_at = NULL, ended_at = $8::bigint, "
     "attempt_outcome = CASE WHEN $2::smallint = " QUEUED " THEN " OUTCOME_RETRIED " ELSE "
     OUTCOME_FAILED " END "
     "WHERE j.id = $1::bigint AND j.status = " RUNNING " AND j.lease_token = $7::text "
     "RETURNING " COLS,
     "fail: the locked running job goes back to queued or to failed (the token is checked "
     "again); claimed_at, heartbeat_at and worker_id stay as history"},
    [PG_SNOOZE] = {PG_SNOOZE, "snooze",
     "UPDATE jobq_jobs j SET status = $4::smallint, run_at = $5::bigint, attempts = "
     "$6::integer, lease_token = NULL, lease_expires_at = NULL, deadline_at = NULL, "
     "ended_at = $3::bigint, attempt_outcome = $7::smallint WHERE "
     LIVE_LEASE("$1::bigint", "$2::text") " RETURNING " COLS,
     "snooze: the locked running job goes back to queued as planned (job_snooze_plan), the "
     "lease checked again; the count trigger records the attempt's outcome"},
    [PG_KEY_LOCK] = {PG_KEY_LOCK, "key_lock",
     "INSERT INTO jobq_keys AS k (key) VALUES ($1::text) ON CONFLICT (key) DO UPDATE SET "
     "key = excluded.key RETURNING k.paused_until",
     "snooze with pause_key: lock the key's row (made when missing) and read its pause "
     "(limit_pause_merge)"},
    [PG_KEY_PAUSE] = {PG_KEY_PAUSE, "key_pause",
     "WITH k AS (UPDATE jobq_keys SET paused_until = $2::bigint WHERE key = $1::text) "
     "UPDATE jobq_lanes SET open_at = greatest(open_at, $2::bigint) WHERE ckey = $1::text "
     "AND ckey <> ''",
     "snooze with pause_key: the key's merged pause, and its lanes open no earlier "
     "(jobq_lanes_key: its predicate repeated)"},
    [PG_CANCEL] = {PG_CANCEL, "cancel",
     "UPDATE jobq_jobs j SET status = " CANCELLED ", finished_at = $2::bigint, "
     "lease_token = NULL, lease_expires_at = NULL, deadline_at = NULL, ended_at = $2::bigint, "
     "attempt_outcome = " OUTCOME_CANCELLED " "
     "WHERE j.id = $1::bigint AND j.status IN (" QUEUED ", " RUNNING ", " BLOCKED ") RETURNING "
     COLS,
     "cancel: a queued, running or blocked job becomes cancelled"},
    [PG_RETRY] = {PG_RETRY, "retry",
     "UPDATE jobq_jobs j SET status = " QUEUED ", attempts = 0, run_at = $2::bigint, "
     "finished_at = NULL WHERE j.id = $1::bigint AND j.status IN (" FAILED ", " CANCELLED ") "
     "RETURNING " COLS,
     "retry: a failed or cancelled job goes back to queued"},
    [PG_NOTIFY] = {PG_NOTIFY, "notify",
     "SELECT pg_notify('" PG_NOTIFY_CHANNEL "', $1::text || ' ' || q) FROM unnest($2::text[]) AS q",
     "every write that made jobs claimable: one notification per queue, sent at commit"},
    [PG_SWEEP_LOCK] = {PG_SWEEP_LOCK,
     "sweep_lock", "SELECT pg_try_advisory_xact_lock(" PG_SWEEP_KEY ")",
     "sweep: the sweeper role for this transaction (PG_SWEEP_KEY); false: another process "
     "sweeps"},
    [PG_SWEEP_EXPIRED] = {PG_SWEEP_EXPIRED, "sweep_expired",
     "SELECT j.id, j.attempts, j.max_attempts, "
     "(j.deadline_at IS NOT NULL AND j.deadline_at <= $1::bigint), j.concurrency_key, "
     "j.created_at, " DEAD_LETTER_COLS " FROM jobq_jobs j "
     "WHERE j.status = " RUNNING " AND (j.lease_expires_at <= $1::bigint OR "
     "j.deadline_at <= $1::bigint) ORDER BY j.id LIMIT $2::integer FOR UPDATE OF j SKIP LOCKED",
     "sweep: lock running jobs whose lease expired or whose max runtime passed (the key and "
     "created_at: job_requeue_at; the queue's dead-letter policy: job_dead_letter)"},
    [PG_SWEEP_END] = {PG_SWEEP_END, "sweep_end",
     "UPDATE jobq_jobs j SET status = u.status, run_at = coalesce(u.run_at, j.run_at), "
     "finished_at = u.finished_at, error_code = u.code, error_detail = NULL, "
     "lease_token = NULL, lease_expires_at = NULL, deadline_at = NULL, ended_at = $6::bigint, "
     "attempt_outcome = CASE WHEN u.code = 'timeout' THEN " OUTCOME_TIMEOUT " ELSE "
     OUTCOME_EXPIRED " END "
     "FROM unnest($1::bigint[], $2::smallint[], $3::bigint[], $4::bigint[], $5::text[]) "
     "AS u(id, status, run_at, finished_at, code) "
     "WHERE j.id = u.id AND j.status = " RUNNING " AND (j.lease_expires_at <= $6::bigint OR "
     "j.deadline_at <= $6::bigint) RETURNING j.queue, j.status, j.run_at, j.error_code, "
     "j.concurrency_key IS NOT NULL, j.id, j.has_dependents",
     "sweep: end the locked expired leases as planned (the expiry is checked again)"},
    [PG_SWEEP_DELETE] = {PG_SWEEP_DELETE, "sweep_delete",
     "DELETE FROM jobq_jobs WHERE id IN (SELECT id FROM jobq_jobs WHERE status IN (" SUCCEEDED
     ", " CANCELLED ") AND finished_at < $1::bigint ORDER BY finished_at LIMIT $2::integer "
     "FOR UPDATE SKIP LOCKED) RETURNING id, status, has_dependents, deps_todo",
     "sweep: retention deletes finished jobs older than the cutoff, each with what its "
     "dependents need (depend_purged)"},
    [PG_SWEEP_EXPIRY] = {PG_SWEEP_EXPIRY, "sweep_expiry",
     "WITH e AS MATERIALIZED (SELECT id FROM jobq_jobs WHERE expires_at <= $1::bigint AND "
     "status IN (" QUEUED ", " BLOCKED ") ORDER BY expires_at LIMIT $2::integer FOR UPDATE SKIP "
     "LOCKED) "
     "UPDATE jobq_jobs j SET status = " CANCELLED ", finished_at = $1::bigint, "
     "error_code = 'expired', error_detail = NULL FROM e WHERE j.id = e.id AND j.status IN ("
     QUEUED ", " BLOCKED ") RETURNING j.queue, j.id, j.has_dependents",
     "sweep: lock queued and blocked jobs whose expires_at passed (jobq_jobs_expires), oldest "
     "first, and cancel them with error_code \"expired\""},
    [PG_COUNTS_FOLD] = {PG_COUNTS_FOLD, "counts_fold",
     "WITH gone AS (DELETE FROM jobq_counts c WHERE c.shard <> 0 AND NOT EXISTS (SELECT 1 FROM "
     "pg_stat_activity a WHERE a.pid = c.shard) RETURNING c.queue, c.status, c.n) "
     "INSERT INTO jobq_counts AS c SELECT queue, status, 0, sum(n) FROM gone "
     "GROUP BY queue, status ON CONFLICT (queue, status, shard) DO UPDATE SET n = c.n + excluded.n",
     "sweep: the count rows of backends that ended (a shard is a backend's pid) fold into "
     "shard 0, so that they stay as many as the live connections"},
    [PG_STATS_STALE] = {PG_STATS_STALE, "stats_stale",
     "SELECT CASE WHEN coalesce(n_mod_since_analyze > greatest(1000, n_live_tup / 4) AND "
     "coalesce(greatest(last_analyze, last_autoanalyze) < now() - interval '10 s', true), false) "
     "THEN pg_try_advisory_lock(" PG_STATS_KEY ") ELSE false END "
     "FROM pg_stat_user_tables WHERE relid = 'jobq_jobs'::regclass",
     "statistics (pg_stats.c): those of the jobs table are stale, no process (nor autovacuum) "
     "analyzed it in the last 10 s, and this session took the analyzing lock (no other "
     "process is analyzing): ANALYZE it, then unlock"},
    [PG_LIST_ALL] = {PG_LIST_ALL, "list_all", LIST(""), "list: no filter"},
    [PG_LIST_QUEUE] = {PG_LIST_QUEUE,
     "list_queue", LIST("j.queue = $3::text AND"), "list: one queue"},
    [PG_LIST_STATUS] = {PG_LIST_STATUS,
     "list_status", LIST("j.status = $3::smallint AND"), "list: one status"},
    [PG_LIST_QUEUE_STATUS] = {PG_LIST_QUEUE_STATUS, "list_queue_status",
     LIST("j.queue = $4::text AND j.status = $3::smallint AND"), "list: one queue and status"},
    [PG_QUEUE_COUNTS] = {PG_QUEUE_COUNTS, "queue_counts",
     "SELECT * FROM (SELECT c.queue, c.status, c.n, CASE WHEN c.status = " QUEUED " THEN (SELECT min(j.run_at) "
     "FROM jobq_jobs j WHERE j.status = " QUEUED " AND j.queue = c.queue AND j.run_at <= "
     "$1::bigint) END, coalesce(p.paused, false) "
     "FROM (SELECT queue, status, sum(n) AS n FROM jobq_counts GROUP BY queue, status "
     "HAVING sum(n) <> 0) AS c LEFT JOIN jobq_queues p ON p.name = c.queue "
     "UNION ALL SELECT p.name, -1, 0, NULL, true FROM jobq_queues p WHERE p.paused) AS r "
     "ORDER BY r.queue COLLATE \"C\"",
     "queues: jobs per queue and status as the trigger keeps them (no scan of the jobs), the "
     "oldest due run_at of the queue (one probe of jobq_jobs_due) and whether it is paused; "
     "then each paused queue (status -1), listed even when it holds no job"},
    [PG_QUEUE_SET] = {PG_QUEUE_SET, "queue_set",
     "INSERT INTO jobq_queues AS q (name, paused, changed_at) VALUES ($1::text, $2::boolean, "
     "$3::bigint) ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, "
     "changed_at = excluded.changed_at RETURNING q.name",
     "pause and resume"},
    [PG_PURGE] = {PG_PURGE, "purge",
     "DELETE FROM jobq_jobs WHERE id IN (SELECT id FROM jobq_jobs WHERE queue = $1::text AND "
     "status = $2::smallint ORDER BY id LIMIT $3::integer FOR UPDATE SKIP LOCKED) "
     "RETURNING id, status, has_dependents, deps_todo",
     "purge: one bounded batch of a queue's jobs in one status (rows another transaction "
     "holds are left for the next batch), each with what its dependents need "
     "(depend_purged)"},
    [PG_LIMITS_READ_KEY] = {PG_LIMITS_READ_KEY, "limits_read_key", LIMITS_READ("x.key = $1::text"),
     "limits, limit put and delete (their answer): the exact limit $1 and the running jobs "
     "and pause of its key (store_limits.h's rows)"},
    [PG_LIMITS_READ_PREFIX] = {PG_LIMITS_READ_PREFIX,
     "limits_read_prefix", LIMITS_READ("starts_with(x.key, $1::text)"),
     "limits, limit put and delete (their answer): the limits whose keys start with $1 by key "
     "(bytewise), then the running jobs and the pauses of the job keys that start with it"},
    [PG_LIMIT_LOCK] = {PG_LIMIT_LOCK,
     "limit_lock", "SELECT pg_advisory_xact_lock(" PG_LIMITS_KEY ")",
     "limit put and delete: one at a time across processes (the count of limits holds)"},
    [PG_LIMIT_PUT] = {PG_LIMIT_PUT, "limit_put",
     "INSERT INTO jobq_limits AS l (key, max_running, rate_jobs, rate_per_seconds, changed_at) "
     "SELECT $1::text, $2::integer, $3::integer, $4::integer, $5::bigint WHERE EXISTS (SELECT 1 "
     "FROM jobq_limits WHERE key = $1::text) OR (SELECT count(*) FROM jobq_limits) < "
     "$6::integer ON CONFLICT (key) DO UPDATE SET max_running = excluded.max_running, "
     "rate_jobs = excluded.rate_jobs, rate_per_seconds = excluded.rate_per_seconds, "
     "changed_at = excluded.changed_at RETURNING l.key",
     "limit put: create or replace a limit; no row: a new key past $6 limits"},
    [PG_LIMIT_DELETE] = {PG_LIMIT_DELETE,
     "limit_delete", "DELETE FROM jobq_limits WHERE key = $1::text",
     "limit delete"},
    [PG_LANES_OPEN] = {PG_LANES_OPEN, "lanes_open",
     "UPDATE jobq_lanes SET open_at = 0 WHERE ckey <> '' AND open_at <> 0 AND (ckey = $1::text "
     "OR (NOT $2::boolean AND starts_with(ckey, $1::text))) RETURNING queue",
     "limit put and delete: reopen the closed lanes of the key $1 (or, $2 false, of every key "
     "starting with $1), whose queues are then told"},
    [PG_ATTEMPTS] = {PG_ATTEMPTS, "attempts",
     "SELECT a.attempt, a.worker_id, a.claimed_at, a.ended_at, a.outcome, a.error_code, "
     "a.error_detail FROM (SELECT id FROM jobq_jobs WHERE id = $1::bigint) AS j "
     "LEFT JOIN jobq_attempts a ON a.job_id = j.id ORDER BY a.fencing_token",
     "attempts: a job's attempt history, oldest first; no row: no such job; one row of NULLs: "
     "no attempt yet"},
    [PG_TP_PUBLISH] = {PG_TP_PUBLISH, "tp_publish",
     "WITH gone AS (DELETE FROM jobq_throughput WHERE at < $1::bigint - " PG_TP_KEEP ") "
     "INSERT INTO jobq_throughput AS t (at, process, enqueued, succeeded, failed) "
     "SELECT u.at, $2::text, u.e, u.s, u.f FROM unnest($3::bigint[], $4::bigint[], "
     "$5::bigint[], $6::bigint[]) AS u(at, e, s, f) ON CONFLICT (at, process) DO UPDATE SET "
     "enqueued = excluded.enqueued, succeeded = excluded.succeeded, failed = excluded.failed",
     "throughput: this process's buckets (its totals per bucket, so a repeat is harmless); "
     "buckets older than 15 minutes go"},
    [PG_TP_OTHERS] = {PG_TP_OTHERS, "tp_others",
     "SELECT at, sum(enqueued), sum(succeeded), sum(failed) FROM jobq_throughput "
     "WHERE at >= $1::bigint AND process <> $2::text GROUP BY at",
     "throughput: the other processes' buckets since $1"},
    [PG_CLOCK] = {PG_CLOCK, "clock",
     "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, pg_is_in_recovery(), "
     "(SELECT coalesce(min(version), 0) FROM jobq_schema WHERE version > $1::integer "
     "AND NOT older_ok)",
     "connect and ping: the server's clock (the skew), whether it takes writes, and the first "
     "migration past this program's schema ($1) that does not keep it working (0: none)"},
    [PG_LANES_REFRESH] = {PG_LANES_REFRESH, "lanes_refresh",
     "WITH d AS (SELECT id FROM jobq_lanes WHERE queue = ANY ($1::text[]) AND check_at <= "
     "$2::bigint ORDER BY check_at LIMIT 64 FOR UPDATE SKIP LOCKED) "
     "UPDATE jobq_lanes l SET (head_id, head_priority, head_run_at) = (SELECT j.id, j.priority, "
     "j.run_at FROM jobq_jobs j WHERE j.lane = l.id AND j.status = " QUEUED " AND j.run_at <= "
     "$2::bigint AND (j.expires_at IS NULL OR j.expires_at > $2::bigint) ORDER BY j.priority "
     "DESC, j.run_at, j.id LIMIT 1), check_at = coalesce((SELECT min(j.run_at) FROM jobq_jobs j "
     "WHERE j.lane = l.id AND j.status = " QUEUED " AND j.run_at > $2::bigint), "
     PG_LANE_NEVER ") FROM d WHERE l.id = d.id",
     "claim (lanes): the lanes of the queues marked to be looked at, at most 64, get their "
     "best due job as head and are looked at again when their next job falls due"},
    [PG_LANES_CANDIDATES] = {PG_LANES_CANDIDATES, "lanes_candidates",
     "WITH q AS (SELECT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 "
     "FROM jobq_queues p WHERE p.name = u.name AND p.paused)) "
     "SELECT 0::bigint, c.id, c.priority, c.run_at, NULL::text FROM q CROSS JOIN LATERAL "
     "(SELECT id, priority, run_at FROM jobq_jobs WHERE status = " QUEUED " AND queue = q.name "
     "AND run_at <= $2::bigint AND lane IS NULL AND (expires_at IS NULL OR expires_at > "
     "$2::bigint) ORDER BY priority DESC, run_at, id LIMIT $4::integer) AS c "
     "UNION ALL SELECT c.id, c.head_id, c.head_priority, c.head_run_at, nullif(c.ckey, '') "
     "FROM q CROSS JOIN LATERAL (SELECT id, head_id, head_priority, head_run_at, ckey FROM "
     "jobq_lanes l WHERE l.queue = q.name AND l.head_id IS NOT NULL AND l.open_at <= "
     "$2::bigint AND (l.requires = '' OR l.requires::jsonb <@ coalesce($3::jsonb, "
     "'[]'::jsonb)) ORDER BY head_priority DESC, head_run_at, head_id LIMIT $4::integer + 8) "
     "AS c "
     "UNION ALL SELECT -1, 0, 0, 0, NULL WHERE EXISTS (SELECT 1 FROM jobq_lanes l, q WHERE "
     "l.queue = q.name AND l.check_at <= $2::bigint)",
     "claim (lanes): the best plain jobs (lane 0) and open lanes that fit the capabilities $3 "
     "(lane id, head) of the queues that are not paused; a row of lane -1 when lanes wait to be "
     "looked at (PG_LANES_REFRESH)"},
    [PG_CLAIM_TAKE_ID] = {PG_CLAIM_TAKE_ID, "claim_take_id",
     "WITH t AS (SELECT id FROM jobq_jobs WHERE id = $1::bigint AND status = " QUEUED " AND "
     "run_at <= $2::bigint AND (expires_at IS NULL OR expires_at > $2::bigint) "
     "FOR UPDATE SKIP LOCKED) "
     "UPDATE jobq_jobs j SET status = " RUNNING ", lease_token = $3::text, "
     "attempts = j.attempts + 1, fencing_token = j.fencing_token + 1, claimed_at = $2::bigint, "
     "heartbeat_at = $2::bigint, lease_expires_at = $2::bigint + $4::bigint, "
     "lease_seconds = $4::bigint, deadline_at = $2::bigint + j.max_runtime_seconds, "
     "worker_id = $5::text FROM t WHERE j.id = t.id RETURNING " COLS,
     "claim (lanes): take one chosen job, unless another claimer holds it or it is not "
     "queued and due any more"},
    [PG_CLAIM_TAKE_NEXT] = {PG_CLAIM_TAKE_NEXT, "claim_take_next",
     "WITH t AS (SELECT id FROM jobq_jobs WHERE id = $1::bigint AND status = " QUEUED " AND "
     "run_at <= $2::bigint AND (expires_at IS NULL OR expires_at > $2::bigint) "
     "FOR UPDATE SKIP LOCKED), "
     "u AS (UPDATE jobq_jobs j SET status = " RUNNING ", lease_token = $3::text, "
     "attempts = j.attempts + 1, fencing_token = j.fencing_token + 1, claimed_at = $2::bigint, "
     "heartbeat_at = $2::bigint, lease_expires_at = $2::bigint + $4::bigint, "
     "lease_seconds = $4::bigint, deadline_at = $2::bigint + j.max_runtime_seconds, "
     "worker_id = $5::text FROM t WHERE j.id = t.id RETURNING " COLS "), "
     "b AS (SELECT id, priority, run_at FROM jobq_jobs WHERE lane = $6::bigint AND status = "
     QUEUED " AND run_at <= $2::bigint AND (expires_at IS NULL OR expires_at > $2::bigint) AND "
     "id <> $1::bigint ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED), "
     "s AS (UPDATE jobq_lanes l SET head_id = b.id, head_priority = b.priority, head_run_at = "
     "b.run_at FROM (SELECT id FROM jobq_lanes WHERE id = $6::bigint FOR UPDATE SKIP LOCKED) "
     "AS me LEFT JOIN b ON true WHERE l.id = me.id) "
     "SELECT u.*, b.id, b.priority, b.run_at FROM (SELECT 1) AS one LEFT JOIN u ON true "
     "LEFT JOIN b ON true",
     "claim (lanes): take the head $1 of lane $6 as PG_CLAIM_TAKE_ID does and, in the same "
     "round trip, the lane's next head as PG_LANE_HEAD finds it (the taken job left out: one "
     "row, the job's columns NULL when it was not taken, the head's when there is none)"},
    [PG_LANE_HEAD] = {PG_LANE_HEAD, "lane_head",
     "WITH b AS (SELECT id, priority, run_at FROM jobq_jobs WHERE lane = $1::bigint AND status "
     "= " QUEUED " AND run_at <= $2::bigint AND (expires_at IS NULL OR expires_at > $2::bigint) "
     "ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED), "
     "s AS (UPDATE jobq_lanes l SET head_id = b.id, head_priority = b.priority, head_run_at = "
     "b.run_at FROM (SELECT id FROM jobq_lanes WHERE id = $1::bigint FOR UPDATE SKIP LOCKED) "
     "AS me LEFT JOIN b ON true WHERE l.id = me.id) "
     "SELECT id, priority, run_at FROM b",
     "claim (lanes): a lane's best due job no other claimer holds, kept as its head unless "
     "another claimer is writing the lane"},
    [PG_KEYS_LOCK] = {PG_KEYS_LOCK, "keys_lock",
     "SELECT k FROM unnest($1::text[]) AS k WHERE pg_try_advisory_xact_lock(" PG_KEY_LOCK("k")
     ")",
     "claim (lanes): the concurrency keys this claim decides on, each locked unless another "
     "transaction holds it (then passed by: a claim never waits)"},
    [PG_KEY_STATE] = {PG_KEY_STATE, "key_state",
     "SELECT (SELECT count(*) FROM jobq_jobs WHERE concurrency_key = $1::text AND status = "
     RUNNING "), coalesce((SELECT paused_until FROM jobq_keys WHERE key = $1::text), 0), "
     "l.key, l.max_running, l.rate_jobs, l.rate_per_seconds, CASE WHEN l.rate_jobs > 0 THEN "
     "(SELECT coalesce(sum(c.n), 0) FROM jobq_key_claims c WHERE c.key = $1::text AND c.at > "
     "$3::bigint - l.rate_per_seconds) ELSE 0 END, (SELECT max(at) FROM jobq_key_claims WHERE "
     "key = $1::text) FROM (SELECT 1) AS one LEFT JOIN "
     "jobq_limits l ON l.key = ANY (ARRAY(SELECT json_array_elements_text($2::json)))",
     "claim (lanes), the statement after the key's lock (one round trip: pipelined): its "
     "running jobs, its pause and the limits that may apply to it ($2: lane_limit_keys_json, "
     "its own and the patterns of its prefixes; limit_resolve chooses), each with the claims "
     "its rate counts at $3 (limit_window_start), and the newest second it counts a claim in "
     "(NULL: none; limit_claim_second)"},
    [PG_KEY_WINDOW] = {PG_KEY_WINDOW, "key_window",
     "SELECT coalesce(sum(n), 0) FROM jobq_key_claims WHERE key = $1::text AND at >= $2::bigint",
     "claim (lanes): the claims of a key its rate counts from second $2, when its claims count "
     "in a second after the claim's now (limit_claim_second)"},
    [PG_KEY_WINDOW_ROWS] = {PG_KEY_WINDOW_ROWS, "key_window_rows",
     "SELECT at, n FROM jobq_key_claims WHERE key = $1::text AND at >= $2::bigint",
     "claim (lanes): the window's rows of a key that closes (limit_open_at)"},
    [PG_KEY_CLAIMED] = {PG_KEY_CLAIMED, "key_claimed",
     "WITH p AS (DELETE FROM jobq_key_claims WHERE key = $1::text AND at < $3::bigint) "
     "INSERT INTO jobq_key_claims AS c (key, at, n) VALUES ($1::text, $2::bigint, 1) "
     "ON CONFLICT (key, at) DO UPDATE SET n = c.n + 1",
     "claim (lanes): one more claim of a rate-limited key in second $2 (its rows before its "
     "window's start $3 go)"},
    [PG_KEY_CLOSE] = {PG_KEY_CLOSE, "key_close",
     "UPDATE jobq_lanes SET open_at = $2::bigint WHERE ckey = $1::text RETURNING queue",
     "claim (lanes): a key without room closes its lanes until $2 (limit_open_at)"},
    [PG_LANES_PICK] = {PG_LANES_PICK, "lanes_pick",
     "WITH w AS MATERIALIZED (SELECT id FROM jobq_lanes WHERE id > $1::bigint ORDER BY id "
     "LIMIT $2::integer), e AS (SELECT l.id FROM jobq_lanes l WHERE l.id IN (SELECT id FROM w) "
     "AND NOT EXISTS (SELECT 1 FROM jobq_jobs j WHERE j.lane = l.id) FOR UPDATE OF l SKIP "
     "LOCKED) SELECT (SELECT max(id) FROM w), (SELECT count(*) FROM w), "
     "(SELECT array_agg(id) FROM e)",
     "sweep: of the next $2 lanes after lane $1 (the last id and how many), those no job "
     "references, locked unless a transaction holds them (an enqueue's upsert: passed by)"},
    [PG_LANES_DROP] = {PG_LANES_DROP, "lanes_drop",
     "DELETE FROM jobq_lanes l WHERE l.id = ANY ($1::bigint[]) AND NOT EXISTS (SELECT 1 FROM "
     "jobq_jobs j WHERE j.lane = l.id)",
     "sweep: the picked lanes go unless a job references them now (a statement after the "
     "lock: it sees the jobs of every enqueue that wrote the lane before; later ones wait for "
     "the lock and make the lane again)"},
    [PG_KEY_CLAIMS_EXPIRE] = {PG_KEY_CLAIMS_EXPIRE, "key_claims_expire",
     "WITH o AS MATERIALIZED (SELECT key, at FROM jobq_key_claims WHERE at < $1::bigint "
     "ORDER BY at LIMIT $2::integer), k AS MATERIALIZED (SELECT key FROM (SELECT DISTINCT key "
     "FROM o) AS d WHERE pg_try_advisory_xact_lock(" PG_KEY_LOCK("d.key") ")) "
     "DELETE FROM jobq_key_claims c USING o, k WHERE c.key = o.key AND c.at = o.at AND "
     "o.key = k.key",
     "sweep: at most $2 claim rows older than every window (limit_claims_oldest), of the keys "
     "whose lock it gets (a claim that holds one prunes them itself; one that comes later "
     "passes the key by until the sweep commits: neither waits)"},
    [PG_IMPORT_LOCK] = {PG_IMPORT_LOCK,
     "import_lock", "LOCK TABLE jobq_jobs, jobq_limits, jobq_keys, jobq_key_claims, jobq_schedules, jobq_ticker, "
     "jobq_sqs_queues IN EXCLUSIVE MODE",
     "import (jobqd migrate): no other writer until the copy commits (reads go on)"},
    [PG_IMPORT_HELD] = {PG_IMPORT_HELD, "import_held",
     "SELECT count(*) FROM (SELECT 1 FROM jobq_jobs LIMIT 1000) AS held",
     "import: refuse a database that holds jobs (how many, up to 1000)"},
    [PG_IMPORT_NEXT_ID] = {PG_IMPORT_NEXT_ID, "import_next_id",
     "SELECT setval(s.name, greatest($1::bigint, nextval(s.name))) "
     "FROM (SELECT pg_get_serial_sequence('jobq_jobs', 'id') AS name) AS s "
     "WHERE $1::bigint > 0",
     "import: ids enqueued later continue after the source's highest (never lowers the "
     "sequence; an empty source leaves it as it is)"},
    [PG_IMPORT_ROWS] = {PG_IMPORT_ROWS, "import_rows",
     "INSERT INTO jobq_jobs (id, queue, status, payload, priority, run_at, attempts, "
     "max_attempts, fencing_token, max_runtime_seconds, requires, idempotency_key, created_at, "
     "claimed_at, heartbeat_at, lease_expires_at, worker_id, finished_at, result, progress, "
     "error_code, error_detail, concurrency_key, expires_at, dedup_key, dedup_mode, "
     "dedup_seconds, depends_on, on_dep_failure, has_dependents, lease_token, traceparent, "
     "tracestate, lease_seconds, deadline_at) "
     "SELECT r.id, r.queue, r.status, r.payload, r.priority, r.run_at, r.attempts, "
     "r.max_attempts, r.fencing_token, r.max_runtime_seconds, "
     "nullif(ARRAY(SELECT json_array_elements_text(r.requires::json)), '{}'), "
     "r.idempotency_key, r.created_at, r.claimed_at, r.heartbeat_at, r.lease_expires_at, "
     "r.worker_id, r.finished_at, r.result, r.progress, r.error_code, r.error_detail, "
     "r.concurrency_key, r.expires_at, r.dedup_key, nullif(r.dedup_mode, 0), r.dedup_seconds, "
     "r.depends_on, r.on_dep_failure, r.has_dependents = 1, "
     "r.lease_token, r.traceparent, r.tracestate, r.lease_seconds, r.deadline_at "
     "FROM unnest($1::bigint[], $2::text[], $3::smallint[], $4::text[], $5::integer[], "
     "$6::bigint[], $7::integer[], $8::integer[], $9::bigint[], $10::bigint[], $11::text[], "
     "$12::text[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::text[], "
     "$18::bigint[], $19::text[], $20::text[], $21::text[], $22::text[], $23::text[], "
     "$24::bigint[], $25::text[], $26::smallint[], $27::bigint[], $28::text[], $29::smallint[], "
     "$30::integer[], $31::text[], $32::text[], $33::text[], $34::bigint[], $35::bigint[]) "
     "AS r(id, queue, status, payload, priority, run_at, "
     "attempts, max_attempts, fencing_token, max_runtime_seconds, requires, idempotency_key, "
     "created_at, claimed_at, heartbeat_at, lease_expires_at, worker_id, finished_at, result, "
     "progress, error_code, error_detail, concurrency_key, expires_at, dedup_key, dedup_mode, "
     "dedup_seconds, depends_on, on_dep_failure, has_dependents, lease_token, traceparent, "
     "tracestate, lease_seconds, deadline_at)",
     "import: one batch of rows, every column, each parameter an array of one column in the "
     "order of job_cols.h then lease_seconds, deadline_at; requires is a JSON array (NULL "
     "when empty, as enqueue stores it)"},
    [PG_IMPORT_COUNTS] = {PG_IMPORT_COUNTS,
     "import_counts", "SELECT status, count(*) FROM jobq_jobs GROUP BY status",
     "import: the jobs per status after the copy, compared with the source's before commit"},
    [PG_IMPORT_ATTEMPTS] = {PG_IMPORT_ATTEMPTS, "import_attempts",
     "INSERT INTO jobq_attempts (job_id, fencing_token, attempt, worker_id, claimed_at, "
     "ended_at, outcome, error_code, error_detail) SELECT * FROM unnest($1::bigint[], "
     "$2::bigint[], $3::integer[], $4::text[], $5::bigint[], $6::bigint[], $7::smallint[], "
     "$8::text[], $9::text[])",
     "import: one batch of attempt history entries, each parameter an array of one column"},
    [PG_IMPORT_ATTEMPT_COUNT] = {PG_IMPORT_ATTEMPT_COUNT,
     "import_attempt_count", "SELECT count(*) FROM jobq_attempts",
     "import: the attempt history entries after the copy, compared with the source's"},
    [PG_IMPORT_PAUSE] = {PG_IMPORT_PAUSE, "import_pause",
     "INSERT INTO jobq_queues (name, paused, changed_at) SELECT q, true, $2::bigint "
     "FROM unnest($1::text[]) AS q ON CONFLICT (name) DO UPDATE SET paused = true",
     "import: the queues the source had paused"},
    [PG_IMPORT_LANES] = {PG_IMPORT_LANES, "import_lanes",
     "INSERT INTO jobq_lanes (queue, requires, ckey, check_at) SELECT DISTINCT queue, "
     "coalesce(array_to_json(requires)::text, ''), coalesce(concurrency_key, ''), 0 "
     "FROM jobq_jobs WHERE lane IS NULL AND (requires IS NOT NULL OR concurrency_key IS NOT "
     "NULL) ON CONFLICT (queue, requires, ckey) DO UPDATE SET check_at = 0",
     "import: the lanes of the copied jobs with requires or a concurrency key"},
    [PG_IMPORT_LANE_SET] = {PG_IMPORT_LANE_SET, "import_lane_set",
     "UPDATE jobq_jobs j SET lane = l.id FROM jobq_lanes l WHERE j.lane IS NULL AND "
     "(j.requires IS NOT NULL OR j.concurrency_key IS NOT NULL) AND l.queue = j.queue AND "
     "l.requires = coalesce(array_to_json(j.requires)::text, '') AND "
     "l.ckey = coalesce(j.concurrency_key, '')",
     "import: each copied job with requires or a concurrency key in its lane"},
    [PG_IMPORT_DEPS] = {PG_IMPORT_DEPS, "import_deps",
     "WITH e AS (INSERT INTO jobq_deps (dep_id, job_id, settled) SELECT d.v::bigint, j.id, "
     "coalesce(p.status IN " ENDED ", true) FROM jobq_jobs j CROSS JOIN LATERAL "
     "json_array_elements_text(j.depends_on::json) AS d(v) LEFT JOIN jobq_jobs p ON p.id = "
     "d.v::bigint WHERE j.depends_on IS NOT NULL ON CONFLICT DO NOTHING RETURNING job_id, "
     "settled) UPDATE jobq_jobs j SET deps_pending = x.n FROM (SELECT job_id, count(*) FILTER "
     "(WHERE NOT settled) AS n FROM e GROUP BY job_id) AS x WHERE j.id = x.job_id AND j.status "
     "= " BLOCKED,
     "import: the edges of the copied jobs from their depends_on (settled when the dependency "
     "ended or is gone), and each blocked job's count of unsettled ones"},
    [PG_IMPORT_ANALYZE] = {PG_IMPORT_ANALYZE, "import_analyze", "ANALYZE jobq_jobs",
     "import: planner statistics for the claim and sweep right after the bulk load"},
    [PG_IMPORT_LIMITS] = {PG_IMPORT_LIMITS, "import_limits",
     "INSERT INTO jobq_limits (key, changed_at, max_running, rate_jobs, rate_per_seconds) "
     "SELECT * FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::integer[], "
     "$5::integer[])",
     "import: one batch of limits (STORE_COPY_LIMITS), each parameter an array of one column"},
    [PG_IMPORT_KEYS] = {PG_IMPORT_KEYS, "import_keys",
     "INSERT INTO jobq_keys (key, paused_until) SELECT * FROM unnest($1::text[], $2::bigint[])",
     "import: one batch of concurrency keys' states (STORE_COPY_KEYS)"},
    [PG_IMPORT_KEY_CLAIMS] = {PG_IMPORT_KEY_CLAIMS, "import_key_claims",
     "INSERT INTO jobq_key_claims (key, at, n) SELECT * FROM unnest($1::text[], $2::bigint[], "
     "$3::integer[])",
     "import: one batch of the claim rows of the keys' rate windows (STORE_COPY_KEY_CLAIMS)"},
    [PG_IMPORT_SCHEDULES] = {PG_IMPORT_SCHEDULES, "import_schedules",
     "INSERT INTO jobq_schedules (name, job, cron, timezone, created_at, every_seconds, "
     "catch_up, overlap, paused, next_run_at, last_run_at, last_job_id, updated_at, rev) "
     "SELECT s.name, s.job, s.cron, s.timezone, s.created_at, s.every_seconds, s.catch_up, "
     "s.overlap, s.paused <> 0, s.next_run_at, s.last_run_at, s.last_job_id, s.updated_at, "
     "s.rev FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], "
     "$6::bigint[], $7::integer[], $8::integer[], $9::integer[], $10::bigint[], $11::bigint[], "
     "$12::bigint[], $13::bigint[], $14::bigint[]) AS s(name, job, cron, timezone, created_at, "
     "every_seconds, catch_up, overlap, paused, next_run_at, last_run_at, last_job_id, "
     "updated_at, rev)",
     "import: one batch of schedules (STORE_COPY_SCHEDULES), every column as stored"},
    [PG_IMPORT_TICKER] = {PG_IMPORT_TICKER, "import_ticker",
     "INSERT INTO jobq_ticker (id, seen_at, stopped_at) SELECT 1, s, s "
     "FROM unnest($1::text[], $2::bigint[]) AS t(one, s)",
     "import: the tickers' liveness row (STORE_COPY_TICKER), marked as a clean stop at its "
     "last pass (the source's jobqd stopped before the copy; its mark is not copied): the "
     "ticks missed during the move are caught up as after a restart"},
    [PG_IMPORT_SQS_QUEUES] = {PG_IMPORT_SQS_QUEUES, "import_sqs_queues",
     "INSERT INTO jobq_sqs_queues (name, attributes, created_at, modified_at) "
     "SELECT s.name, s.attributes::jsonb, s.created_at, s.modified_at FROM unnest($1::text[], "
     "$2::text[], $3::bigint[], $4::bigint[]) AS s(name, attributes, created_at, modified_at)",
     "import: one batch of SQS queues (STORE_COPY_SQS_QUEUES), every column as stored"},
    [PG_IMPORT_TABLE_COUNTS] = {PG_IMPORT_TABLE_COUNTS, "import_table_counts",
     "SELECT (SELECT count(*) FROM jobq_limits), (SELECT count(*) FROM jobq_keys), "
     "(SELECT count(*) FROM jobq_key_claims), (SELECT count(*) FROM jobq_schedules), "
     "(SELECT count(*) FROM jobq_ticker), (SELECT count(*) FROM jobq_sqs_queues)",
     "import: the rows of each table beside the jobs (enum store_copy_table's order), "
     "compared with the source's before commit"},
    [PG_IMPORT_KEY_PAUSES] = {PG_IMPORT_KEY_PAUSES, "import_key_pauses",
     "UPDATE jobq_lanes l SET open_at = k.paused_until FROM jobq_keys k WHERE l.ckey = k.key "
     "AND l.ckey <> '' AND k.paused_until > l.open_at",
     "import: the lanes of a paused key open no earlier than its pause (as key_pause)"},
    [PG_DEDUP_LOCK] = {PG_DEDUP_LOCK, "dedup_lock",
     "SELECT count(pg_advisory_xact_lock(s.h)) FROM (SELECT DISTINCT "
     "hashtextextended(u.q || E'\\n' || u.k, 0) AS h FROM unnest($1::text[], $2::text[]) "
     "AS u(q, k) ORDER BY 1) AS s",
     "enqueue with dedup keys: the transaction-long lock of each (queue, dedup key) of the "
     "call, taken in one order (no two such calls deadlock), before the lookups: enqueues of "
     "one key, in any process, decide one after the other, each on what the last committed"},
    [PG_DEDUP_ACTIVE] = {PG_DEDUP_ACTIVE, "dedup_active",
     "SELECT " COLS " FROM jobq_jobs j WHERE j.queue = $1::text AND j.dedup_key = $2::text "
     "AND " DEDUP_LIVE " ORDER BY j.id DESC LIMIT 1",
     "enqueue, dedup active: the newest unfinished job of the key (jobq_jobs_dedup_live)"},
    [PG_DEDUP_WINDOW] = {PG_DEDUP_WINDOW, "dedup_window",
     "SELECT " COLS " FROM jobq_jobs j WHERE j.queue = $1::text AND j.dedup_key = $2::text "
     "ORDER BY j.id DESC LIMIT 1",
     "enqueue, dedup window: the newest job of the key (one probe of jobq_jobs_dedup), which "
     "dedup_decide checks against the window: a key's jobs are created in id order"},
    [PG_DEDUP_DEBOUNCE] = {PG_DEDUP_DEBOUNCE, "dedup_debounce",
     "SELECT " COLS " FROM jobq_jobs j WHERE j.queue = $1::text AND j.dedup_key = $2::text "
     "AND " DEDUP_LIVE " AND j.status = " QUEUED " AND j.claimed_at IS NULL "
     "ORDER BY j.id DESC LIMIT 1",
     "enqueue, dedup debounce: the newest queued job of the key never claimed "
     "(jobq_jobs_dedup_live)"},
    [PG_DEDUP_REPLACE] = {PG_DEDUP_REPLACE, "dedup_replace",
     "UPDATE jobq_jobs j SET payload = $2::text, run_at = $3::bigint WHERE j.id = $1::bigint "
     "AND j.status = " QUEUED " AND j.claimed_at IS NULL RETURNING " COLS,
     "enqueue, dedup debounce: the job found gets the new payload and run_at, unless a claim "
     "took it since (no row: the enqueue creates a job instead)"},
    [PG_DEP_LOCK] = {PG_DEP_LOCK, "dep_lock",
     "WITH l AS (SELECT id, status FROM jobq_jobs WHERE id = ANY ($1::bigint[]) ORDER BY id FOR "
     "UPDATE), m AS (UPDATE jobq_jobs j SET has_dependents = true FROM l WHERE j.id = l.id AND "
     "NOT j.has_dependents) SELECT id, status FROM l",
     "enqueue with depends_on: lock the dependencies (in id order), mark them as waited for, "
     "and read their statuses after the lock (an end that committed before is seen)"},
    [PG_DEP_EDGES] = {PG_DEP_EDGES, "dep_edges",
     "INSERT INTO jobq_deps (dep_id, job_id, settled) SELECT u.d, u.j, u.s FROM "
     "unnest($1::bigint[], $2::bigint[], $3::boolean[]) AS u(d, j, s) ON CONFLICT DO NOTHING",
     "enqueue with depends_on: the new jobs' edges (dependency, dependent, settled)"},
    [PG_DEP_VISIT] = {PG_DEP_VISIT, "dep_visit",
     "SELECT (SELECT status FROM jobq_jobs WHERE id = $1::bigint), count(*) FROM (SELECT j.id "
     "FROM jobq_deps d JOIN jobq_jobs j ON j.id = d.job_id WHERE d.dep_id = $1::bigint ORDER BY "
     "j.id FOR UPDATE OF j) l",
     "a walk's visit of a job (its end, its retry, its purge): its dependents locked in id "
     "order before any statement reads them or their other dependencies, so that each "
     "re-evaluation of a dependent reads (on a later snapshot) what the one before committed; "
     "and the job's status (NULL: gone)"},
    [PG_DEP_SETTLE] = {PG_DEP_SETTLE, "dep_settle",
     "WITH e AS (UPDATE jobq_deps SET settled = true WHERE dep_id = $1::bigint AND NOT settled "
     "RETURNING job_id), "
     "l AS (SELECT j.id FROM jobq_jobs j JOIN e ON e.job_id = j.id ORDER BY j.id FOR UPDATE OF "
     "j), "
     "x AS (UPDATE jobq_jobs j SET status = " CANCELLED ", finished_at = $2::bigint, "
     "error_code = $6::text, error_detail = $5::text, deps_pending = 0 FROM l WHERE j.id = "
     "l.id AND j.status = " BLOCKED " AND j.on_dep_failure = ANY ($3::smallint[]) "
     "RETURNING j.id, j.has_dependents, j.queue), "
     "y AS (UPDATE jobq_jobs j SET deps_pending = j.deps_pending - 1, status = CASE WHEN "
     "j.deps_pending <= 1 THEN " QUEUED " ELSE " BLOCKED " END, run_at = CASE WHEN "
     "j.deps_pending <= 1 THEN greatest(j.run_at, $2::bigint) ELSE j.run_at END FROM l WHERE "
     "j.id = l.id AND j.status = " BLOCKED " AND j.on_dep_failure = ANY ($4::smallint[]) "
     "RETURNING j.id, j.status = " QUEUED " AS released, j.queue, j.run_at) "
     "SELECT true, id, has_dependents, queue, 0::bigint FROM x UNION ALL "
     "SELECT false, id, released, queue, run_at FROM y",
     "a job's end: its unsettled edges settle; the blocked dependents whose mode it cancels "
     "($3, depend_effect) are cancelled (their has_dependents says whether to go on), those it "
     "settles ($4) count one less and are queued at depend_release_run_at when none is left"},
    [PG_DEP_UNSETTLE] = {PG_DEP_UNSETTLE, "dep_unsettle",
     "WITH e AS (UPDATE jobq_deps SET settled = false WHERE dep_id = $1::bigint AND settled "
     "RETURNING job_id), b AS (UPDATE jobq_jobs j SET deps_pending = j.deps_pending + 1 FROM e "
     "WHERE j.id = e.job_id AND j.status = " BLOCKED ") SELECT j.id FROM jobq_jobs j JOIN e ON "
     "e.job_id = j.id WHERE j.status = " CANCELLED " AND j.error_code = $2::text AND "
     "j.error_detail = $3::text",
     "a job's retry: its settled edges come back (a blocked dependent waits one more), and the "
     "dependents cancelled because of it (depend_cancelled_by) are listed to re-evaluate"},
    [PG_DEP_PARENTS] = {PG_DEP_PARENTS, "dep_parents",
     "SELECT d.dep_id, j.status FROM jobq_deps d LEFT JOIN jobq_jobs j ON j.id = d.dep_id "
     "WHERE d.job_id = $1::bigint ORDER BY d.dep_id",
     "retry: a dependent to re-evaluate, its dependencies' statuses"},
    [PG_DEP_EDGES_SET] = {PG_DEP_EDGES_SET, "dep_edges_set",
     "UPDATE jobq_deps d SET settled = u.s FROM unnest($2::bigint[], $3::boolean[]) AS u(dep, s) "
     "WHERE d.job_id = $1::bigint AND d.dep_id = u.dep AND d.settled <> u.s",
     "retry: a re-evaluated dependent's edges, settled as its dependencies are now"},
    [PG_DEP_BLOCK] = {PG_DEP_BLOCK, "dep_block",
     "UPDATE jobq_jobs SET status = " BLOCKED ", deps_pending = $2::integer, error_code = NULL, "
     "error_detail = NULL, finished_at = NULL WHERE id = $1::bigint AND status = " CANCELLED
     " RETURNING has_dependents",
     "retry: a re-evaluated dependent waits again"},
    [PG_DEP_DETAIL] = {PG_DEP_DETAIL,
     "dep_detail", "UPDATE jobq_jobs SET error_detail = $2::text WHERE id = $1::bigint",
     "retry: a dependent that stays cancelled names the dependency that cancels it now"},
    [PG_DEP_PIN] = {PG_DEP_PIN, "dep_pin",
     "UPDATE jobq_jobs j SET error_detail = $2::text FROM jobq_deps d WHERE d.dep_id = "
     "$1::bigint AND j.id = d.job_id AND j.status = " CANCELLED " AND j.error_code = $3::text "
     "AND j.on_dep_failure = ANY ($4::smallint[]) AND j.error_detail <> $2::text",
     "purge: the dependents of a purged job that its end cancels ($4, depend_effect) and "
     "another dependency cancelled name it from now on (it never comes back: a retry of the "
     "other leaves them cancelled)"},
    [PG_DEP_RETRIED] = {PG_DEP_RETRIED, "dep_retried",
     "WITH w AS (SELECT count(*) FILTER (WHERE p.status NOT IN " ENDED ") AS n FROM jobq_deps d "
     "JOIN jobq_jobs p ON p.id = d.dep_id WHERE d.job_id = $1::bigint), "
     "e AS (UPDATE jobq_deps d SET settled = coalesce((SELECT p.status IN " ENDED " FROM "
     "jobq_jobs p WHERE p.id = d.dep_id), true) WHERE d.job_id = $1::bigint) "
     "UPDATE jobq_jobs j SET status = " BLOCKED ", deps_pending = w.n FROM w WHERE j.id = "
     "$1::bigint AND w.n > 0 RETURNING " COLS,
     "retry of a job with dependencies: its edges settled as they are now, and blocked while "
     "one has not ended (a failed one counts as settled: depend.h)"},
    [PG_DEP_TODO] = {PG_DEP_TODO, "dep_todo",
     "UPDATE jobq_jobs SET deps_todo = $2::boolean WHERE id = ANY ($1::bigint[])",
     "a walk down a graph past its bound: the jobs whose dependents the sweep visits (true), "
     "or visited (false)"},
    [PG_DEP_TODO_PICK] = {PG_DEP_TODO_PICK, "dep_todo_pick",
     "SELECT id FROM jobq_jobs WHERE deps_todo ORDER BY id LIMIT $1::integer FOR UPDATE SKIP "
     "LOCKED",
     "sweep: the jobs whose dependents a write left for it (jobq_jobs_deps_todo)"},
    [PG_LINKS_DEPS] = {PG_LINKS_DEPS, "links_deps",
     "SELECT j.id, j.status, j.result, j.queue FROM jobq_deps d JOIN jobq_jobs j ON j.id = "
     "d.dep_id WHERE d.job_id = $1::bigint ORDER BY j.id LIMIT $2::integer",
     "dependencies: the jobs a job depends on"},
    [PG_LINKS_DEPENDENTS] = {PG_LINKS_DEPENDENTS, "links_dependents",
     "SELECT j.id, j.status, j.result, j.queue FROM jobq_deps d JOIN jobq_jobs j ON j.id = "
     "d.job_id WHERE d.dep_id = $1::bigint ORDER BY d.job_id LIMIT $2::integer",
     "dependents: the jobs that depend on a job"},
    [PG_SCHEDULES_ALL] = {PG_SCHEDULES_ALL, "schedules_all",
     "SELECT " SCHEDULE_COLS " FROM jobq_schedules ORDER BY name",
     "schedules read (GET /schedules): every schedule by name (bytewise: the C collation)"},
    [PG_SCHEDULE_GET] = {PG_SCHEDULE_GET, "schedule_get",
     "SELECT " SCHEDULE_COLS " FROM jobq_schedules WHERE name = $1::text",
     "schedules read of one name (GET /schedules/{name})"},
    [PG_SCHEDULES_NEXT] = {PG_SCHEDULES_NEXT, "schedules_next",
     "SELECT " SCHEDULE_COLS " FROM jobq_schedules WHERE next_run_at IS NOT NULL "
     "ORDER BY next_run_at, name LIMIT $1::integer",
     "schedules next (the ticker): the unpaused schedules that tick soonest"},
    [PG_SCHEDULES_COUNT] = {PG_SCHEDULES_COUNT,
     "schedules_count", "SELECT count(*) FROM jobq_schedules",
     "schedules count (/metrics)"},
    [PG_SCHEDULE_LOCK] = {PG_SCHEDULE_LOCK,
     "schedule_lock", "SELECT pg_advisory_xact_lock(" PG_SCHEDULES_KEY ")",
     "schedule put: one at a time across processes (the count of schedules holds)"},
    [PG_SCHEDULE_OLD_NEXT] = {PG_SCHEDULE_OLD_NEXT, "schedule_old_next",
     "SELECT next_run_at FROM jobq_schedules WHERE name = $1::text FOR UPDATE",
     "schedule put: the next_run_at it replaces (a due tick it keeps: schedule_put_next), the "
     "row locked so that no tick moves it before the put"},
    [PG_SCHEDULE_PUT] = {PG_SCHEDULE_PUT, "schedule_put",
     "INSERT INTO jobq_schedules AS s (name, job, cron, every_seconds, timezone, catch_up, "
     "overlap, paused, next_run_at, created_at, updated_at, rev) "
     "SELECT $1::text, $2::text, $3::text, $4::bigint, $5::text, $6::integer, $7::integer, "
     "$8::boolean, $9::bigint, $10::bigint, $10::bigint, $12::bigint "
     "WHERE EXISTS (SELECT 1 FROM jobq_schedules WHERE name = $1::text) "
     "OR (SELECT count(*) FROM jobq_schedules) < $11::integer "
     "ON CONFLICT (name) DO UPDATE SET job = excluded.job, cron = excluded.cron, "
     "every_seconds = excluded.every_seconds, timezone = excluded.timezone, "
     "catch_up = excluded.catch_up, overlap = excluded.overlap, paused = excluded.paused, "
     "next_run_at = excluded.next_run_at, updated_at = excluded.updated_at, rev = s.rev + 1 "
     "RETURNING " SCHEDULE_COLS,
     "schedule put: create (rev $12) or replace a schedule, keeping its runs; no row: a new "
     "name past $11 schedules"},
    [PG_SCHEDULE_DELETE] = {PG_SCHEDULE_DELETE, "schedule_delete",
     "DELETE FROM jobq_schedules WHERE name = $1::text RETURNING " SCHEDULE_COLS,
     "schedule delete: the row as it was"},
    [PG_SCHEDULE_CAS] = {PG_SCHEDULE_CAS, "schedule_cas",
     "UPDATE jobq_schedules SET next_run_at = $4::bigint, rev = rev + 1 WHERE name = $1::text "
     "AND rev = $2::bigint AND next_run_at = $3::bigint AND NOT paused RETURNING last_job_id",
     "schedule tick: move next_run_at on if the row is still the one the ticker read (a racing "
     "tick waits for the row's lock, then finds it changed)"},
    [PG_SCHEDULE_RAN] = {PG_SCHEDULE_RAN, "schedule_ran",
     "UPDATE jobq_schedules SET last_run_at = $2::bigint, last_job_id = $3::bigint "
     "WHERE name = $1::text",
     "schedule tick: the tick's job"},
    [PG_JOB_STATUS] = {PG_JOB_STATUS,
     "job_status", "SELECT status FROM jobq_jobs WHERE id = $1::bigint",
     "schedule tick with overlap skip: the status of the previous tick's job"},
    [PG_TICKER_PASS] = {PG_TICKER_PASS, "ticker_pass",
     "WITH old AS (SELECT seen_at, stopped_at FROM jobq_ticker WHERE id = 1 FOR UPDATE), "
     "up AS (INSERT INTO jobq_ticker (id, seen_at) VALUES (1, $1::bigint) ON CONFLICT (id) "
     "DO UPDATE SET seen_at = greatest(jobq_ticker.seen_at, excluded.seen_at), "
     "stopped_at = NULL) "
     "SELECT (SELECT seen_at FROM old), (SELECT stopped_at FROM old)",
     "schedule pass: the last pass of any ticker and the clean stop marked after it, then "
     "this pass (no ticker has stopped since)"},
    [PG_TICKER_STOP] = {PG_TICKER_STOP,
     "ticker_stop", "UPDATE jobq_ticker SET stopped_at = $1::bigint WHERE id = 1",
     "schedule stop: a ticker stopped cleanly at $1 (the ticks after it come due unseen)"},
    [PG_EVENTS_READ] = {PG_EVENTS_READ, "events_read",
     "SELECT k.pruned_through, e.seq, e.type, e.at, e.job_id, e.queue, e.status, e.attempts, "
     "e.fencing_token, e.error_code, e.concurrency_key, e.traceparent FROM jobq_events_kept k "
     "LEFT JOIN LATERAL (SELECT * FROM jobq_events WHERE seq > $1::bigint "
     "AND seq < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20) "
     "ORDER BY seq LIMIT $2::bigint) e ON true WHERE k.id = 1 ORDER BY e.seq",
     "events read: the highest seq deleted, and the events after seq $1 (at most $2) of the "
     "transactions older than every one still running (seq's high bits are the xid: "
     "docs/events.md), in one snapshot"},
    [PG_EVENTS_PRUNE] = {PG_EVENTS_PRUNE, "events_prune",
     "WITH gone AS (DELETE FROM jobq_events WHERE seq IN (SELECT seq FROM jobq_events "
     "ORDER BY seq LIMIT $2::bigint) AND (at < $1::bigint OR seq <= coalesce(CASE WHEN "
     "(SELECT reltuples < 0 OR reltuples > $3::bigint * 0.9 FROM pg_class "
     "WHERE oid = 'jobq_events'::regclass) THEN (SELECT seq FROM jobq_events ORDER BY seq DESC OFFSET $3::bigint LIMIT 1) END, 0)) "
     "RETURNING seq), top AS (SELECT max(seq) AS seq FROM gone), "
     "up AS (UPDATE jobq_events_kept SET pruned_through = greatest(pruned_through, top.seq) "
     "FROM top WHERE id = 1 AND top.seq IS NOT NULL) SELECT count(*), "
     "coalesce((SELECT min(seq) FROM jobq_events WHERE seq > coalesce((SELECT seq FROM top), "
     "0)), 0), pg_stat_get_tuples_inserted('jobq_events'::regclass), "
     "greatest(pg_stat_get_live_tuples('jobq_events'::regclass) - count(*), 0) FROM gone",
     "sweep events: of the $2 oldest events, those before the cutoff $1 or beyond the newest "
     "$3 (counted only when the planner's estimate of the rows nears $3, or it has none: the "
     "count walks $3 index entries); the highest seq deleted is kept for the readers' gaps. "
     "Then, for /metrics: the oldest seq left (the statement sees the rows before its delete), "
     "the rows ever inserted and the live rows left, from the table's statistics"},
    /* The SQS queue statements' SQL: pg_stmt_sqs.h. */
    [PG_SQS_QUEUE_GET] = {PG_SQS_QUEUE_GET, "sqs_queue_get", SQL_SQS_QUEUE_GET,
     "sqs queues read of one name; sqs queue put: the row as stored"},
    [PG_SQS_QUEUES_LIST] = {PG_SQS_QUEUES_LIST, "sqs_queues_list", SQL_SQS_QUEUES_LIST,
     "sqs queues read of a prefix (ListQueues), after a name"},
    [PG_SQS_QUEUE_INSERT] = {PG_SQS_QUEUE_INSERT, "sqs_queue_insert", SQL_SQS_QUEUE_INSERT,
     "sqs queue put (create): the new row, nothing when it exists"},
    [PG_SQS_QUEUE_MERGE] = {PG_SQS_QUEUE_MERGE, "sqs_queue_merge", SQL_SQS_QUEUE_MERGE,
     "sqs queue put (merge): the attributes given replace the stored ones"},
    [PG_SQS_QUEUE_DELETE] = {PG_SQS_QUEUE_DELETE, "sqs_queue_delete", SQL_SQS_QUEUE_DELETE,
     "sqs queue delete"},
    /* The webhook statements' SQL: pg_stmt_webhook.h. */
    [PG_WEBHOOK_LOCK] = {PG_WEBHOOK_LOCK, "webhook_lock", SQL_WEBHOOK_LOCK,
     "webhook put: one at a time across processes (the count of subscriptions holds)"},
    [PG_WEBHOOK_GET] = {PG_WEBHOOK_GET, "webhook_get", SQL_WEBHOOK_GET,
     "webhooks read of one name; webhook put, lease and done: does it exist"},
    [PG_WEBHOOKS_ALL] = {PG_WEBHOOKS_ALL, "webhooks_all", SQL_WEBHOOKS_ALL,
     "webhooks read of every subscription (GET /webhooks, a delivery pass)"},
    [PG_WEBHOOK_PUT] = {PG_WEBHOOK_PUT, "webhook_put", SQL_WEBHOOK_PUT,
     "webhook put: create or replace a subscription; no row: a new name past $11"},
    [PG_WEBHOOK_DELETE] = {PG_WEBHOOK_DELETE, "webhook_delete", SQL_WEBHOOK_DELETE,
     "webhook delete"},
    [PG_WEBHOOK_LEASE] = {PG_WEBHOOK_LEASE, "webhook_lease", SQL_WEBHOOK_LEASE,
     "webhook lease: the compare and swap that takes a free, due subscription's lease"},
    [PG_WEBHOOK_DONE] = {PG_WEBHOOK_DONE, "webhook_done", SQL_WEBHOOK_DONE,
     "webhook done: an attempt's delivery state, under the lease it re-checks and ends"},
    [PG_WEBHOOK_PARKED] = {PG_WEBHOOK_PARKED, "webhook_parked", SQL_WEBHOOK_PARKED,
     "webhook lease: the subscription's parked events, for its holder"},
    [PG_WEBHOOK_PARK] = {PG_WEBHOOK_PARK, "webhook_park", SQL_WEBHOOK_PARK,
     "webhook done: park an event, or write a parked event's retry state"},
    [PG_WEBHOOK_UNPARK] = {PG_WEBHOOK_UNPARK, "webhook_unpark", SQL_WEBHOOK_UNPARK,
     "webhook done: a parked event delivered or given up"},
    [PG_WEBHOOK_UNPARK_ALL] = {PG_WEBHOOK_UNPARK_ALL, "webhook_unpark_all", SQL_WEBHOOK_UNPARK_ALL,
     "webhook delete: its parked events"},
};
/* clang-format on */

const struct pg_stmt_def *pg_stmt_def(enum pg_stmt_id id)
{
    assert((unsigned)id < PG_STMT_COUNT);
    assert(stmts[id].id == id);
    return &stmts[id];
}
