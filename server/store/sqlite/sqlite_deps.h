/* Workflows on SQLite (depend.h): the edges of an enqueued job, and what the end or the retry
 * of a job does to its dependents. Every function runs inside the writer's transaction on c
 * and returns STORE_OK or the error that rolls it back. */
#ifndef JOBQ_SQLITE_DEPS_H
#define JOBQ_SQLITE_DEPS_H

#include "depend.h"
#include "sqlite_conn.h"
#include "sqlite_tx.h"

/* The dependencies ids[0..n) of a job of mode `mode` about to be enqueued: each is marked as
 * having dependents, its status read, and *plan is depend_plan() of their effects;
 * settled[i] is 1 when dependency i already counts. STORE_NOT_FOUND (with *missing its id)
 * when one does not exist. */
enum store_result sqlite_deps_plan(struct sqlite_conn *c, const int64_t *ids, size_t n,
                                   enum dep_mode mode, unsigned char *settled,
                                   struct depend_plan *plan, int64_t *missing);

/* Job id was just inserted in plan->status with dependencies ids[0..n) (settled as
 * sqlite_deps_plan said): record its edges, its depends_on text and mode, its pending count,
 * and for a cancelled plan its end (error_code, error_detail, finished_at now). */
enum store_result sqlite_deps_record(struct sqlite_conn *c, int64_t id, const int64_t *ids,
                                     size_t n, const unsigned char *settled, const char *text,
                                     enum dep_mode mode, const struct depend_plan *plan,
                                     int64_t now);

/* Job j (its row after the write) ended, or was retried: when it has dependents, settle,
 * release, cancel or re-block them as depend.h says, down the graph for at most
 * DEPEND_STEP_MAX jobs (the rest marked for sqlite_deps_sweep). Released jobs are in notes'
 * news and counts. Nothing for a job without dependents. */
enum store_result sqlite_deps_moved(struct sqlite_conn *c, const struct job *j, int64_t now,
                                    struct sqlite_notes *notes);

/* Jobs ids[0..n) of queue were deleted by a purge or by retention in this transaction (their
 * edges to their dependents stay): their dependents are settled as if job i had ended in
 * ends[i] (depend_purged), and so on down the graph as sqlite_deps_moved does; the dependents
 * that ends[i] cancels and another dependency cancelled are pinned to job i (depend.h). The
 * deleted jobs count as visited jobs of its DEPEND_STEP_MAX. A dependent deleted too is
 * passed over. */
enum store_result sqlite_deps_purged(struct sqlite_conn *c, const int64_t *ids,
                                     const enum job_status *ends, size_t n, const char *queue,
                                     int64_t now, struct sqlite_notes *notes);

/* Step st, a bound delete of at most max jobs (a purge's batch, retention's) that returns
 * id, status, has_dependents, deps_todo per deleted job, to its end (and reset it); then
 * sqlite_deps_purged for the jobs whose dependents need a visit (depend_purged), with queue
 * as it takes it (NULL: the sweep's own delete). *deleted is the number of jobs deleted (0
 * on failure). */
enum store_result sqlite_deps_deleted(struct sqlite_conn *c, sqlite3_stmt *st, size_t max,
                                      const char *queue, int64_t now, struct sqlite_notes *notes,
                                      size_t *deleted);

/* A retried job j (its row after the retry, queued): when it has dependencies, blocked
 * instead while one of them has not ended (a failed one counts as settled: the retry asked
 * for the job to run); *blocked is 1 then and j is updated. */
enum store_result sqlite_deps_retried(struct sqlite_conn *c, struct job *j, int *blocked);

/* The sweep's part: visit at most `batch` jobs marked by an earlier write; *visited is how
 * many. */
enum store_result sqlite_deps_sweep(struct sqlite_conn *c, int64_t now, int batch, int *visited,
                                    struct sqlite_notes *notes);

#endif
