/* store_claim for SQLite: promote due scheduled jobs (only when the writer knows that one may
 * be due), gather the top plain jobs and the open lanes of every requested queue, and take
 * jobs in claim order (lane_claim.h: a lane gives jobs while its concurrency key has room),
 * each by compare-and-swap from queued to running, all in one short transaction. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rand.h"
#include "sqlite_lanes.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

struct claim_arg {
    const struct claim_req *req;
    const char *caps; /* NULL: the claimer has no capabilities */
    int max_jobs;
    int64_t now;
    struct job *out;
    size_t *n;
    struct lane_cand *cand; /* room for CLAIM_CANDIDATES(nqueues, max_jobs) */
    struct sqlite_notes *notes;
    const struct sqlite_writer *w; /* due_work: whether scheduled jobs are due */
};

/* Candidates a claim gathers per queue: its best plain jobs and lanes, and in all (the best
 * of them are kept: a claim takes max_jobs at most, past a few closed keys). */
#define LANES_EXTRA 8
#define CLAIM_CANDIDATES(nqueues, max_jobs)                                                        \
    ((size_t)(nqueues) * (2 * (size_t)(max_jobs) + LANES_EXTRA))
#define CLAIM_KEPT(max_jobs) (2 * (size_t)(max_jobs) + 64)

/* Claim order: priority desc, run_at asc, id asc. */
static int candidate_cmp(const void *pa, const void *pb)
{
    const struct lane_cand *a = pa, *b = pb;
    return job_claim_order(a->priority, a->run_at, a->id, b->priority, b->run_at, b->id);
}

/* Append the top `limit` jobs of queue that belong to no lane, not expired at now, to cand;
 * *got is how many. */
static enum store_result pick(struct sqlite_conn *c, const char *queue, int limit, int64_t now,
                              struct lane_cand *cand, size_t *got)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_CLAIM_PICK_PLAIN);
    int rc = sqlite_conn_bind_text(st, 1, queue);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, limit);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, now);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind claim pick");
        sqlite3_reset(st);
        return r;
    }
    *got = 0;
    while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW && *got < (size_t)limit) {
        cand[*got] = (struct lane_cand){.id = sqlite3_column_int64(st, 0),
                                        .priority = sqlite3_column_int64(st, 1),
                                        .run_at = sqlite3_column_int64(st, 2)};
        (*got)++;
    }
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = sqlite_conn_fail(c, rc, "claim pick");
    sqlite3_reset(st);
    return r;
}

/* *yes = 1 when queue is paused (claims skip it without reading its jobs). */
static enum store_result is_paused(struct sqlite_conn *c, const char *queue, int *yes)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_QUEUE_PAUSED);
    int rc = sqlite_conn_bind_text(st, 1, queue);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    *yes = rc == SQLITE_ROW;
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = sqlite_conn_fail(c, rc, "claim: queue paused");
    sqlite3_reset(st);
    return r;
}

/* A job claimed more often than JOB_ATTEMPTS_KEPT: its attempts older than the newest that
 * many (the one starting now included) go. */
static enum store_result trim_attempts(struct sqlite_conn *c, const struct job *j)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_ATTEMPTS_TRIM);
    int rc = sqlite3_bind_int64(st, 1, j->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, j->fencing_token);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "trim attempts");
    sqlite3_reset(st);
    return r;
}

/* Queued -> running for one chosen job with a fresh lease token; its count moves. */
static enum store_result take(struct sqlite_conn *c, void *arg, int64_t id, struct job *out)
{
    const struct claim_arg *a = arg;
    char token[JOB_TOKEN_LEN + 1];
    if (rand_token(token) != 0)
        return STORE_ERROR;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_CLAIM_TAKE);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, token, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, a->now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, a->req->lease_seconds);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 5, a->req->worker_id);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind claim take");
        sqlite3_reset(st);
        return r;
    }
    enum store_result r = sqlite_row_write(c, st, id, 1, "claim take", out);
    if (r != STORE_OK)
        return r;
    if (sqlite_notes_move(a->notes, out->id, out->queue, JOB_QUEUED, JOB_RUNNING,
                          ATTEMPT_RUNNING) != 0)
        r = STORE_ERROR;
    else if (out->fencing_token > JOB_ATTEMPTS_KEPT)
        r = trim_attempts(c, out);
    if (r != STORE_OK)
        job_clear(out);
    return r;
}

static int claim_tx(struct sqlite_conn *c, void *p)
{
    struct claim_arg *a = p;
    *a->n = 0;
    enum store_result r = STORE_OK;
    if (a->w->due_work <= a->now) {
        /* A scheduled job may be due (or the writer does not know yet): promote first. */
        int promoted = 0;
        r = sqlite_sweep_promote(c, a->now, SQLITE_PROMOTE_BATCH, a->notes, &promoted);
        if (r != STORE_OK)
            return r;
    }
    int lanes = a->w->lanes_work;
    if (lanes == SQLITE_LANES_UNKNOWN) {
        r = sqlite_lanes_any(c, &lanes);
        if (r != STORE_OK)
            return r;
        a->notes->lanes = lanes;
    }
    size_t ncand = 0;
    for (size_t q = 0; q < a->req->nqueues && r == STORE_OK; q++) {
        size_t got = 0;
        int skip = 0;
        r = is_paused(c, a->req->queues[q], &skip);
        if (r != STORE_OK || skip)
            continue;
        r = pick(c, a->req->queues[q], a->max_jobs, a->now, a->cand + ncand, &got);
        ncand += got;
        if (r != STORE_OK || lanes == SQLITE_LANES_NONE)
            continue;
        got = 0;
        r = sqlite_lanes_candidates(c, a->req->queues[q], a->caps, a->now,
                                    a->max_jobs + LANES_EXTRA, a->cand + ncand, &got);
        ncand += got;
    }
    if (r == STORE_OK) {
        qsort(a->cand, ncand, sizeof *a->cand, candidate_cmp);
        size_t kept = ncand < CLAIM_KEPT(a->max_jobs) ? ncand : CLAIM_KEPT(a->max_jobs);
        struct sqlite_lanes_take t = {take, a};
        r = sqlite_lanes_claim(c, &t, a->now, a->notes, a->cand, kept, a->max_jobs, a->out, a->n);
    }
    lane_cands_clear(a->cand, ncand);
    return r;
}

static void claim_discard(void *p)
{
    struct claim_arg *a = p;
    for (size_t i = 0; i < *a->n; i++)
        job_clear(&a->out[i]);
    *a->n = 0;
}

/* The claim transaction and its arguments, in one block. */
struct claim_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct claim_req bounded;
    struct claim_arg a;
    struct lane_cand cand[]; /* CLAIM_CANDIDATES(nqueues, max_jobs) */
};

struct sqlite_tx *sqlite_claim_tx(struct sqlite_store *st, struct store_call *call)
{
    const struct claim_req *req = call->claim.req;
    call->claim.n = 0;
    if (req->nqueues == 0 || req->max_jobs < 1) {
        call->result = STORE_OK;
        return NULL;
    }
    int max_jobs = req->max_jobs > JOB_CLAIM_MAX ? JOB_CLAIM_MAX : req->max_jobs;
    size_t nqueues = req->nqueues > JOB_QUEUES_MAX ? JOB_QUEUES_MAX : req->nqueues;
    size_t ncand = CLAIM_CANDIDATES(nqueues, max_jobs);
    struct claim_block *b = malloc(sizeof *b + ncand * sizeof b->cand[0]);
    if (!b) {
        log_error("out of memory for %zu claim candidates", ncand);
        call->result = STORE_ERROR;
        return NULL;
    }
    b->bounded = *req;
    b->bounded.nqueues = nqueues;
    const char *caps = req->capabilities;
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct claim_arg){&b->bounded,    caps,    max_jobs,  call->now,  call->claim.out,
                              &call->claim.n, b->cand, &b->notes, &st->writer};
    b->tx = (struct sqlite_tx){.name = "claim",
                               .fn = claim_tx,
                               .discard = claim_discard,
                               .arg = &b->a,
                               .notes = &b->notes,
                               .now = call->at_clock ? &b->a.now : NULL,
                               .weight = max_jobs};
    return &b->tx;
}
