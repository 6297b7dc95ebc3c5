/* Workflows on PostgreSQL (depend.h): an enqueued job's edges, and what the end or the retry
 * of a job does to its dependents. The rules are depend.h's; the statements (pg_stmt.c) store
 * and select. Every function runs inside the caller's transaction on c. */
#ifndef JOBQ_PG_DEPS_H
#define JOBQ_PG_DEPS_H

#include "depend.h"
#include "pg_store.h"

/* Lock the dependencies ids[0..n) of a job of mode `mode` about to be enqueued (in id order),
 * mark them as waited for and read their statuses after the lock: settled[i] (1 when
 * dependency i counts already) and *plan (depend_plan). STORE_NOT_FOUND with *missing set
 * when one does not exist. */
enum store_result pg_deps_plan(struct pg_conn *c, const int64_t *ids, size_t n, enum dep_mode mode,
                               unsigned char *settled, struct depend_plan *plan, int64_t *missing);

/* Job id, just inserted queued, takes its plan's status and dependency columns (text: the ids
 * as the API shows them) and its edges; *out is its row then (replaced). */
enum store_result pg_deps_record(struct pg_conn *c, int64_t id, const int64_t *ids, size_t n,
                                 const unsigned char *settled, const char *text, enum dep_mode mode,
                                 const struct depend_plan *plan, int64_t now, struct job *out);

/* Job id (of queue) ended or was retried, when it has dependents: settle, release, cancel or
 * re-block them down the graph for at most DEPEND_STEP_MAX jobs (the rest marked for
 * pg_deps_sweep). The queues of released jobs are in notes. */
enum store_result pg_deps_moved(struct pg_conn *c, int64_t id, const char *queue,
                                int has_dependents, int64_t now, struct store_news *notes);

/* A retried job j (queued by the retry): blocked instead while one of its dependencies has
 * not ended (depend.h); *blocked is 1 then and *j is its row. */
enum store_result pg_deps_retried(struct pg_conn *c, struct job *j, int *blocked);

/* The sweep's part: visit at most batch jobs a write marked; *visited is how many. */
enum store_result pg_deps_sweep(struct pg_conn *c, int64_t now, int batch, int *visited,
                                struct store_news *notes);

#endif
