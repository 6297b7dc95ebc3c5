/* Lanes and concurrency keys on SQLite (docs/flow-control.md). Every function runs inside
 * the writer's transaction on c and returns STORE_OK or the error that rolls it back. */
#ifndef JOBQ_SQLITE_LANES_H
#define JOBQ_SQLITE_LANES_H

#include "lane_claim.h"
#include "sqlite_conn.h"
#include "sqlite_tx.h"

/* Lanes a claim looks at again per queue, at most (the rest: at the next claim). */
#define SQLITE_LANES_CHECK 64

/* The lane of a job enqueued from sp (made when new): *lane its id, or JOB_NONE when the job
 * has neither requires nor a concurrency key (it is a plain job). due: 1 when the job is
 * queued now (the next claim looks at the lane's head again). */
enum store_result sqlite_lane_of(struct sqlite_conn *c, const struct job_spec *sp, int due,
                                 int64_t *lane);

/* Job j (its row after the write) is queued again (requeue, retry): its lane's head is
 * looked at again by the next claim. Nothing for a plain job. */
enum store_result sqlite_lane_requeued(struct sqlite_conn *c, const struct job *j);

/* A job of lane became queued by promotion; lane JOB_NONE: jobs of too many lanes to name,
 * every lane without a head is looked at again. */
enum store_result sqlite_lane_promoted(struct sqlite_conn *c, int64_t lane);

/* Job j (its row after the write) stopped running: the lanes its concurrency key closed for
 * max_running open again, and the queues they belong to are in notes' news. Nothing for a
 * job without a key. */
enum store_result sqlite_key_released(struct sqlite_conn *c, const struct job *j,
                                      struct sqlite_notes *notes);

/* Drop the lanes that no job references (of any status: a job keeps its lane id, and a
 * requeued or retried job goes back to that lane) among the `batch` lanes after lane *from
 * by id. *from becomes the last lane looked at, or 0 when none was left after it (the next
 * call starts over); *dropped is how many lanes went. One writer: an enqueue runs before or
 * after, and then makes the lane again. */
enum store_result sqlite_lanes_drop(struct sqlite_conn *c, int64_t *from, int batch, int *dropped);

/* *known = SQLITE_LANES_SOME when the database holds a lane, else SQLITE_LANES_NONE. */
enum store_result sqlite_lanes_any(struct sqlite_conn *c, int *known);

/* The claim's take: move job id from queued to running for the claimer, into out;
 * STORE_NOT_FOUND when it is not queued (or expired) any more. */
struct sqlite_lanes_take {
    enum store_result (*fn)(struct sqlite_conn *c, void *arg, int64_t id, struct job *out);
    void *arg;
};

/* The open lanes of queue whose requires fit caps (NULL: the claimer has none), best head
 * first, at most limit, into out (*n of them; their ckey owned: lane_cands_clear). Looks at
 * the heads of the queue's lanes marked for it first. */
enum store_result sqlite_lanes_candidates(struct sqlite_conn *c, const char *queue,
                                          const char *caps, int64_t now, int limit,
                                          struct lane_cand *out, size_t *n);

/* lane_claim_run over cands[0..n) with SQLite's primitives. */
enum store_result sqlite_lanes_claim(struct sqlite_conn *c, const struct sqlite_lanes_take *take,
                                     int64_t now, struct sqlite_notes *notes,
                                     struct lane_cand *cands, size_t n, int max_jobs,
                                     struct job *out, size_t *got);

#endif
