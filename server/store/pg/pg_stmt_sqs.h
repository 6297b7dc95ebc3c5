/* The SQL of the PostgreSQL store's SQS queue statements (pg_sqs.c), as the SQLite store's
 * (sqlite_stmt.c) row for row; their rows, with what uses each, are in pg_stmt.c's table.
 * Included by pg_stmt.c only. */
#ifndef JOBQ_PG_STMT_SQS_H
#define JOBQ_PG_STMT_SQS_H

/* The columns of every statement that returns whole queue rows. */
#define SQS_QUEUE_COLS "name, attributes::text, created_at, modified_at"

#define SQL_SQS_QUEUE_GET "SELECT " SQS_QUEUE_COLS " FROM jobq_sqs_queues WHERE name = $1"

#define SQL_SQS_QUEUES_LIST                                                                        \
    "SELECT " SQS_QUEUE_COLS " FROM jobq_sqs_queues "                                              \
    "WHERE name COLLATE \"C\" > $2 AND left(name, length($1)) = $1 ORDER BY name COLLATE \"C\" "   \
    "LIMIT $3::int"

#define SQL_SQS_QUEUE_INSERT                                                                       \
    "INSERT INTO jobq_sqs_queues (name, attributes, created_at, modified_at) "                     \
    "VALUES ($1, $2::jsonb, $3::bigint, $3::bigint) ON CONFLICT (name) DO NOTHING "                \
    "RETURNING " SQS_QUEUE_COLS

#define SQL_SQS_QUEUE_MERGE                                                                        \
    "UPDATE jobq_sqs_queues SET attributes = attributes || $2::jsonb, "                            \
    "modified_at = $3::bigint WHERE name = $1 RETURNING " SQS_QUEUE_COLS

#define SQL_SQS_QUEUE_DELETE "DELETE FROM jobq_sqs_queues WHERE name = $1 RETURNING name"

#endif
