/* The PostgreSQL enqueue: what its plain path (pg_enqueue.c) and its path for jobs with
 * dependencies (pg_enqueue_deps.c) share (pg_insert.c), and that path. Every function runs
 * inside the caller's transaction on c. */
#ifndef JOBQ_PG_ENQUEUE_H
#define JOBQ_PG_ENQUEUE_H

#include "pg_store.h"

/* PG_JOB_INSERT's parameters: one array per column, and $9, now. The first 16 are every
 * job's (the last two its trace context); the rest ($17..$25: id, status and the dependency
 * columns) stay NULL (the defaults: an id from the sequence, queued, no dependency) unless a
 * job with dependencies sets them. */
#define PG_INSERT_PARAMS 25
#define PG_INSERT_PLAIN 16

/* Append the columns of one job of sp, enqueued at now, to col[0..PG_INSERT_PLAIN) (col[8]
 * stays empty: it is now, a scalar). */
void pg_insert_cols(struct pg_arr col[PG_INSERT_PARAMS], const struct job_spec *sp, int64_t now);

/* Fill b for PG_JOB_INSERT from the columns in col[] (which this empties; an empty column past
 * PG_INSERT_PLAIN is NULL) and now. Returns 0, or -1 (logged). */
int pg_insert_params(struct pg_arr col[PG_INSERT_PARAMS], int64_t now, struct pg_bind *b);

/* The news of a job that a commit leaves queued at j->run_at (nothing for another status). */
void pg_note_queued(struct store_news *notes, const struct job *j, int64_t now);

/* The job that holds sp's idempotency_key into *out: STORE_OK, or STORE_NOT_FOUND. */
enum store_result pg_idempotency_find(struct pg_conn *c, const struct job_spec *sp,
                                      struct job *out);

/* Enqueue every spec of e, some with dependencies, none with a dedup key and no two with one
 * (queue, idempotency_key), set-based: the jobs they depend on locked at once in id order,
 * each new job inserted with its planned status (depend.h) in one statement, then every edge
 * in one more. order: depend_order's (an element's index dependencies before it; the new ids
 * follow it). An idempotency_key hit creates nothing (its job in e->out, created 0). Returns
 * STORE_OK, STORE_NOT_FOUND (e->missing_spec and e->missing_id set: nothing written), or a
 * failure (STORE_BUSY when a concurrent enqueue took a key meanwhile: run it again). */
enum store_result pg_enqueue_deps(struct pg_conn *c, struct store_enqueue_call *e,
                                  const size_t *order, int64_t now, struct store_news *notes);

/* Enqueue one spec whose dependencies are ids[0..n) (distinct): an idempotency_key hit reads
 * the existing job first (and writes nothing; a spec with a dedup key had its key looked up
 * by the dedup path already); else they are locked and read, then the job
 * goes in with its plan and its edges (*created = 1). STORE_NOT_FOUND with *missing set when
 * a dependency does not exist. */
enum store_result pg_enqueue_dep_one(struct pg_conn *c, const struct job_spec *sp,
                                     const int64_t *ids, size_t n, int64_t now, struct job *out,
                                     int *created, struct store_news *notes, int64_t *missing);

#endif
