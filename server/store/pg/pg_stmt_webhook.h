/* The SQL of the PostgreSQL store's webhook statements (pg_webhooks.c), as the SQLite store's
 * (sqlite_stmt.c) row for row; their rows, with what uses each, are in pg_stmt.c's table.
 * Included by pg_stmt.c only. */
#ifndef JOBQ_PG_STMT_WEBHOOK_H
#define JOBQ_PG_STMT_WEBHOOK_H

#include "pg_stmt.h"

/* The columns of every statement that returns whole subscriptions (pg_webhooks.c). */
#define WEBHOOK_COLS                                                                               \
    "name, url, types, queues, secret, prev_secret, prev_until, enabled::integer, "                \
    "ordered::integer, created_at, updated_at, delivered_seq, failing_since, next_attempt_at, "    \
    "attempts, last_status, last_error, last_attempt_at, disabled_reason, deliveries, failures, "  \
    "failed_events, lease_token, lease_until, retry_at"

/* The reads add the count of parked events. */
#define WEBHOOK_READ_COLS                                                                          \
    WEBHOOK_COLS ", (SELECT count(*) FROM jobq_webhook_parked p WHERE p.name = w.name)"

#define SQL_WEBHOOK_LOCK "SELECT pg_advisory_xact_lock(" PG_WEBHOOKS_KEY ")"

#define SQL_WEBHOOK_GET "SELECT " WEBHOOK_READ_COLS " FROM jobq_webhooks w WHERE name = $1::text"

#define SQL_WEBHOOKS_ALL                                                                           \
    "SELECT " WEBHOOK_READ_COLS " FROM jobq_webhooks w ORDER BY name COLLATE \"C\""

#define SQL_WEBHOOK_PUT                                                                            \
    "INSERT INTO jobq_webhooks AS w (name, url, types, queues, secret, enabled, ordered, "         \
    "created_at, updated_at, delivered_seq) "                                                      \
    "SELECT $1::text, $2::text, $3::bigint, $4::text, coalesce($5::text, $6::text), "              \
    "$7::boolean, $8::boolean, $9::bigint, $9::bigint, "                                           \
    "(SELECT coalesce(max(seq), 0) FROM jobq_events) "                                             \
    "WHERE EXISTS (SELECT 1 FROM jobq_webhooks WHERE name = $1::text) "                            \
    "OR (SELECT count(*) FROM jobq_webhooks) < $11::integer "                                      \
    "ON CONFLICT (name) DO UPDATE SET url = excluded.url, types = excluded.types, "                \
    "queues = excluded.queues, "                                                                   \
    "prev_secret = CASE WHEN $5::text IS NOT NULL AND $5::text <> w.secret THEN w.secret "         \
    "ELSE w.prev_secret END, "                                                                     \
    "prev_until = CASE WHEN $5::text IS NOT NULL AND $5::text <> w.secret THEN $10::bigint "       \
    "ELSE w.prev_until END, "                                                                      \
    "secret = coalesce($5::text, w.secret), enabled = excluded.enabled, "                          \
    "ordered = excluded.ordered, "                                                                 \
    "disabled_reason = CASE WHEN excluded.enabled THEN NULL ELSE w.disabled_reason END, "          \
    "failing_since = CASE WHEN excluded.enabled AND NOT w.enabled THEN NULL "                      \
    "ELSE w.failing_since END, "                                                                   \
    "next_attempt_at = CASE WHEN excluded.enabled AND NOT w.enabled THEN NULL "                    \
    "ELSE w.next_attempt_at END, "                                                                 \
    "attempts = CASE WHEN excluded.enabled AND NOT w.enabled THEN 0 ELSE w.attempts END, "         \
    "updated_at = $9::bigint RETURNING " WEBHOOK_COLS

#define SQL_WEBHOOK_DELETE "DELETE FROM jobq_webhooks WHERE name = $1::text RETURNING " WEBHOOK_COLS

#define SQL_WEBHOOK_LEASE                                                                          \
    "UPDATE jobq_webhooks SET lease_token = $2::text, lease_until = $3::bigint "                   \
    "WHERE name = $1::text AND enabled AND (lease_until IS NULL OR lease_until <= $4::bigint) "    \
    "AND (next_attempt_at IS NULL OR next_attempt_at <= $4::bigint) RETURNING " WEBHOOK_COLS

#define SQL_WEBHOOK_DONE                                                                           \
    "UPDATE jobq_webhooks SET delivered_seq = $4::bigint, failing_since = $5::bigint, "            \
    "next_attempt_at = $6::bigint, attempts = $7::bigint, last_status = $8::bigint, "              \
    "last_error = $9::text, last_attempt_at = $10::bigint, deliveries = $11::bigint, "             \
    "failures = $12::bigint, failed_events = $13::bigint, enabled = enabled AND $14::boolean, "    \
    "disabled_reason = CASE WHEN $14::boolean THEN disabled_reason ELSE $15::text END, "           \
    "retry_at = $16::bigint, lease_token = NULL, lease_until = NULL "                              \
    "WHERE name = $1::text AND lease_token = $2::text AND lease_until > $3::bigint "               \
    "RETURNING " WEBHOOK_COLS

#define SQL_WEBHOOK_PARKED                                                                         \
    "SELECT seq, job_id, attempts, failing_since, next_attempt_at FROM jobq_webhook_parked "       \
    "WHERE name = $1::text ORDER BY seq LIMIT $2::integer"

#define SQL_WEBHOOK_PARK                                                                           \
    "INSERT INTO jobq_webhook_parked (name, seq, job_id, attempts, failing_since, "                \
    "next_attempt_at) VALUES ($1::text, $2::bigint, $3::bigint, $4::bigint, $5::bigint, "          \
    "$6::bigint) ON CONFLICT (name, seq) DO UPDATE SET attempts = excluded.attempts, "             \
    "failing_since = excluded.failing_since, next_attempt_at = excluded.next_attempt_at"

#define SQL_WEBHOOK_UNPARK                                                                         \
    "DELETE FROM jobq_webhook_parked WHERE name = $1::text AND seq = $2::bigint"

#define SQL_WEBHOOK_UNPARK_ALL "DELETE FROM jobq_webhook_parked WHERE name = $1::text"

#endif
