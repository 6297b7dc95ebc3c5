/* Workflows on PostgreSQL (depend.h): an enqueued job's edges, and what the end or the retry
 * of a job does to its dependents. The rules are depend.h's; the statements (pg_stmt.c) store
 * and select. Every function runs inside the caller's transaction on c. */
#ifndef JOBQ_PG_DEPS_H
#define JOBQ_PG_DEPS_H

#include "depend.h"
#include "pg_store.h"

/* Lock the jobs ids[0..n) that jobs about to be enqueued depend on (in id order, whatever the
 * order of ids; repeats allowed), mark them as waited for (has_dependents) and read their
 * statuses after the lock into status[0..n) (NULL: only lock them). STORE_NOT_FOUND with
 * *missing set when one does not exist. */
enum store_result pg_deps_lock(struct pg_conn *c, const int64_t *ids, size_t n,
                               enum job_status *status, int64_t *missing);

/* pg_deps_lock for the dependencies ids[0..n) of one job of mode `mode`, then its plan:
 * settled[i] (1 when dependency i counts already) and *plan (depend_plan). */
enum store_result pg_deps_plan(struct pg_conn *c, const int64_t *ids, size_t n, enum dep_mode mode,
                               unsigned char *settled, struct depend_plan *plan, int64_t *missing);

/* Job id (of queue) ended or was retried, when it has dependents: settle, release, cancel or
 * re-block them down the graph for at most DEPEND_STEP_MAX jobs (the rest marked for
 * pg_deps_sweep). The queues of released jobs are in notes. Each visited job's dependents
 * are locked in id order before they or their other dependencies are read, so that changes
 * of two dependencies of one job committed at once by two processes are counted one after
 * the other (the caller holds the row lock of job id itself: its update). */
enum store_result pg_deps_moved(struct pg_conn *c, int64_t id, const char *queue,
                                int has_dependents, int64_t now, struct store_news *notes);

/* Jobs ids[0..n) of queue were deleted by a purge or by retention in this transaction (their
 * edges to their dependents stay): their dependents are settled as if job i had ended in
 * ends[i] (a final status: depend_purged), and so on down the graph as pg_deps_moved does;
 * the dependents that ends[i] cancels and another dependency cancelled are pinned to job i
 * (depend.h). The deleted jobs count as visited jobs of its DEPEND_STEP_MAX. A dependent
 * deleted too is passed over. */
enum store_result pg_deps_purged(struct pg_conn *c, const int64_t *ids, const enum job_status *ends,
                                 size_t n, const char *queue, int64_t now,
                                 struct store_news *notes);

/* The rows of a delete of jobs in this transaction (a purge's batch, retention's), res
 * (borrowed) as RETURNING id, status, has_dependents, deps_todo gave them: pg_deps_purged for
 * those whose dependents need a visit (depend_purged), with queue as it takes it (NULL: the
 * sweep's own delete). */
enum store_result pg_deps_deleted(struct pg_conn *c, const PGresult *res, const char *queue,
                                  int64_t now, struct store_news *notes);

/* A retried job j (queued by the retry): blocked instead while one of its dependencies has
 * not ended (depend.h); *blocked is 1 then and *j is its row. */
enum store_result pg_deps_retried(struct pg_conn *c, struct job *j, int *blocked);

/* The sweep's part: visit at most batch jobs a write marked; *visited is how many. */
enum store_result pg_deps_sweep(struct pg_conn *c, int64_t now, int batch, int *visited,
                                struct store_news *notes);

#endif
