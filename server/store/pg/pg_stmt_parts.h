/* The pieces of SQL that several statements of the PostgreSQL statement table (pg_stmt.c)
 * share: the job statuses and attempt outcomes as the schema stores them, the job columns, and
 * the fragments of the claim, lease and list statements. Included by pg_stmt.c only. */
#ifndef JOBQ_PG_STMT_PARTS_H
#define JOBQ_PG_STMT_PARTS_H

#include "pg_row.h"

/* enum job_status values as SQL literals: partial indexes serve only queries whose WHERE
 * repeats their terms. PostgreSQL stores no "scheduled" status: a queued job is due when
 * run_at <= now, and the claim checks that itself (no process-local cache decides it). */
#define QUEUED "1"
#define RUNNING "2"
#define SUCCEEDED "3"
#define FAILED "4"
#define CANCELLED "5"
#define BLOCKED "6"
#define ENDED "(" SUCCEEDED ", " FAILED ", " CANCELLED ")"
_Static_assert(JOB_BLOCKED == 6, "status literals");
_Static_assert(JOB_QUEUED == 1 && JOB_RUNNING == 2 && JOB_SUCCEEDED == 3, "status literals");
_Static_assert(JOB_FAILED == 4 && JOB_CANCELLED == 5, "status literals");

/* enum attempt_outcome values the statements set as literals. */
#define OUTCOME_SUCCEEDED "1"
#define OUTCOME_FAILED "2"
#define OUTCOME_RETRIED "3"
#define OUTCOME_EXPIRED "4"
#define OUTCOME_TIMEOUT "5"
#define OUTCOME_CANCELLED "6"
_Static_assert(ATTEMPT_SUCCEEDED == 1 && ATTEMPT_FAILED == 2 && ATTEMPT_RETRIED == 3,
               "outcome literals");
_Static_assert(ATTEMPT_EXPIRED == 4 && ATTEMPT_TIMEOUT == 5 && ATTEMPT_CANCELLED == 6,
               "outcome literals");

#define PG_TP_KEEP "900" /* seconds of throughput buckets kept */

#define COLS PG_JOB_COLUMNS

/* A job that is not finished, as the partial index jobq_jobs_dedup_live (migration 6) says it. */
#define DEDUP_LIVE "j.status NOT IN (" SUCCEEDED ", " FAILED ", " CANCELLED ")"

/* The lease that token holds on job id is live at time $3. "+ 0" keeps the planner off the
 * lease and deadline indexes (running jobs, which also hold an entry for every job claimed
 * since the last vacuum; "status + 0" is not their predicate): a plan chose them over the
 * primary key, and every heartbeat and complete then scanned one whole (45 ms each after
 * 60,000 claims). */
/* The maxReceiveCount and deadLetterTargetArn of the RedrivePolicy of the SQS queue of job j
 * (NULLs: none; store_sqs.h). */
#define DEAD_LETTER_POLICY(field)                                                                  \
    "(SELECT CASE WHEN q.attributes->>'RedrivePolicy' LIKE '{%' THEN "                             \
    "(q.attributes->>'RedrivePolicy')::jsonb->>'" field "' END FROM jobq_sqs_queues q "            \
    "WHERE q.name = j.queue)"
#define DEAD_LETTER_COLS                                                                           \
    DEAD_LETTER_POLICY("maxReceiveCount") ", " DEAD_LETTER_POLICY("deadLetterTargetArn")

#define LIVE_LEASE(id, token)                                                                      \
    "j.id = " id " AND j.lease_token = " token " AND j.status + 0 = " RUNNING                      \
    " AND j.lease_expires_at + 0 > $3::bigint AND (j.deadline_at IS NULL OR j.deadline_at > "      \
    "$3::bigint)"

/* claim: the due jobs of queue q that belong to no lane and are not expired (expiry_passed), while no lane of q is open for a
 * claimer with the capabilities $3 (nor waits to be looked at): then the claim takes the
 * lanes' way (pg_lanes.c), which orders lanes and plain jobs together. */
#define CLAIM_DUE(q)                                                                               \
    "status = " QUEUED " AND queue = " q " AND run_at <= $2::bigint AND lane IS NULL AND NOT "     \
    "EXISTS (SELECT 1 FROM jobq_lanes l WHERE l.queue = " q " AND (l.check_at <= $2::bigint OR "   \
    "(l.head_id IS NOT NULL AND l.open_at <= $2::bigint AND (l.requires = '' OR "                  \
    "l.requires::jsonb <@ coalesce($3::jsonb, '[]'::jsonb))))) AND (expires_at IS NULL OR "        \
    "expires_at > $2::bigint)"

/* claim: take the picked jobs, the n-th best (its place in o.ids) with the n-th token $5,
 * lease $6 and worker $7, by primary key through one array (o is one row whatever the
 * LIMIT). Joined with the picked rows instead, a generic plan (the claim's is cached) saw a
 * LIMIT it could not know as a tenth of the table and hashed the whole table at every
 * claim; "status + 0" keeps the update off the queued-jobs indexes. Every row also says
 * (the last column) whether a lane of the queues (lanes_of: a condition on l.queue) may
 * hold a job for the claimer, open or due for a look: only then does a claim that took
 * nothing look through the lanes (pg_lanes_claim). When nothing is taken, one row of NULLs
 * carries that column. */
#define CLAIM_TAKE(lanes_of)                                                                       \
    "o AS (SELECT array_agg(id ORDER BY priority DESC, run_at, id) AS ids FROM picked), "          \
    "t AS (UPDATE jobq_jobs j SET status = " RUNNING ", "                                          \
    "lease_token = ($5::text[])[array_position(o.ids, j.id)], "                                    \
    "attempts = j.attempts + 1, fencing_token = j.fencing_token + 1, claimed_at = $2::bigint, "    \
    "heartbeat_at = $2::bigint, "                                                                  \
    "lease_expires_at = $2::bigint + ($6::bigint[])[array_position(o.ids, j.id)], "                \
    "lease_seconds = ($6::bigint[])[array_position(o.ids, j.id)], "                                \
    "deadline_at = $2::bigint + j.max_runtime_seconds, "                                           \
    "worker_id = ($7::text[])[array_position(o.ids, j.id)] FROM o "                                \
    "WHERE j.id = ANY (o.ids) AND j.status + 0 = " QUEUED " RETURNING " COLS                       \
    ", array_position(o.ids, j.id) AS rn) "                                                        \
    "SELECT t.*, m.lanes FROM (SELECT EXISTS (SELECT 1 FROM jobq_lanes l WHERE " lanes_of " AND "  \
    "(l.check_at <= $2::bigint OR (l.head_id IS NOT NULL AND l.open_at <= $2::bigint))) AS "       \
    "lanes) "                                                                                      \
    "AS m LEFT JOIN t ON true"

/* heartbeat: extend the lease (lease 0: by the claim's length), maybe store progress. */
#define HEARTBEAT_SET(lease, has_progress, progress)                                               \
    "UPDATE jobq_jobs j SET heartbeat_at = $3::bigint, lease_expires_at = $3::bigint + "           \
    "CASE WHEN " lease " > 0 THEN " lease " ELSE j.lease_seconds END, "                            \
    "progress = CASE WHEN " has_progress " THEN " progress " ELSE j.progress END "

/* complete: the lease ends in success (lease_token is kept for idempotent repeats). */
#define COMPLETE_SET(result)                                                                       \
    "UPDATE jobq_jobs j SET status = " SUCCEEDED ", finished_at = $3::bigint, result = " result    \
    ", ended_at = $3::bigint, attempt_outcome = " OUTCOME_SUCCEEDED " "

/* List: jobs matching cond after id $1, at most $2 of them, by id. */
#define LIST(cond)                                                                                 \
    "SELECT " COLS " FROM jobq_jobs j WHERE " cond " j.id > $1::bigint ORDER BY j.id LIMIT "       \
    "$2::bigint"

/* limits: the limits whose key `match`es (a condition on x.key), in key order (bytewise),
 * then the running jobs and the paused keys (paused_until after $2) of the job keys that
 * match, the claims in the window at $2 of the limits' own keys (rate), and the due jobs of
 * the lanes closed at $2 of the job keys that match; the first column says which row is which
 * (store_limits.h). */
#define LIMITS_READ(match)                                                                         \
    "SELECT 0 AS kind, x.key COLLATE \"C\" AS key, coalesce(x.max_running, 0)::bigint, "           \
    "coalesce(x.rate_jobs, 0)::bigint, coalesce(x.rate_per_seconds, 0)::bigint FROM jobq_limits "  \
    "x "                                                                                           \
    "WHERE " match                                                                                 \
    " UNION ALL SELECT 1, x.key, count(*), NULL, NULL FROM (SELECT concurrency_key AS key FROM "   \
    "jobq_jobs WHERE status = " RUNNING " AND concurrency_key IS NOT NULL) x WHERE " match         \
    " GROUP BY x.key UNION ALL SELECT 2, x.key, x.paused_until, NULL, NULL FROM jobq_keys x "      \
    "WHERE x.paused_until > $2::bigint AND " match " UNION ALL SELECT 3, x.key, sum(c.n), "        \
    "NULL, NULL FROM jobq_limits x JOIN jobq_key_claims c ON c.key = x.key WHERE x.rate_jobs IS "  \
    "NOT NULL AND c.at > $2::bigint - x.rate_per_seconds AND " match " GROUP BY x.key UNION ALL "  \
    "SELECT 4, x.key, count(*), NULL, NULL FROM (SELECT l.ckey AS key FROM jobq_lanes l JOIN "     \
    "jobq_jobs j ON j.lane = l.id WHERE l.ckey <> '' AND l.open_at > $2::bigint AND j.status "     \
    "= " QUEUED " AND j.run_at <= $2::bigint) x WHERE " match " GROUP BY x.key ORDER BY kind, key"

/* The columns of every statement that returns whole schedules (pg_schedules.c). */
#define SCHEDULE_COLS                                                                              \
    "name, job, cron, every_seconds, timezone, catch_up, overlap, paused::integer, "               \
    "next_run_at, last_run_at, last_job_id, created_at, updated_at, rev"

#endif
