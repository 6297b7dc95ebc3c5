/* Filling jobq's table before a measurement: due jobs for drain and claim, and a history of
 * finished and delayed jobs for the claim-with-history comparison. Several connections work
 * in parallel; every phase is bounded by opts.timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobq_api.h"

#define FILL_BATCH 1000 /* jobs per batch request */
#define FILL_CONNS 4    /* connections that enqueue */
#define FINISH_CONNS 16 /* connections that claim and complete */

struct filler {
    struct tstate ts;
    atomic_long *left; /* jobs still to enqueue (shared) */
    long delay;
    long done; /* jobs this filler enqueued or completed */
    int64_t deadline;
};

static int past(const struct filler *f)
{
    return atomic_load(&f->ts.r->abort) || now_ns() >= f->deadline;
}

/* Enqueue batches until *left runs out. */
static void *enqueue_main(void *arg)
{
    struct filler *f = arg;
    const struct opts *o = f->ts.r->o;
    char *body = malloc(BODY_MAX);
    if (!body)
        return run_fail(f->ts.r, "out of memory");
    while (!past(f)) {
        long n = atomic_fetch_sub(f->left, FILL_BATCH);
        if (n <= 0)
            break;
        int k = n < FILL_BATCH ? (int)n : FILL_BATCH;
        struct http_resp resp;
        size_t len = jq_batch_body(body, BODY_MAX, o->queue, k, 1, f->delay);
        int st = jq_post(&f->ts.c, "/jobs/batch", body, len, &resp);
        if (st != 201) {
            jq_report(&f->ts, "fill", st, &resp);
            run_fail(f->ts.r, "filling the table failed");
            break;
        }
        f->done += k;
    }
    free(body);
    return NULL;
}

/* Claim (max_jobs 100) and complete until the queue is empty. */
static void *finish_main(void *arg)
{
    struct filler *f = arg;
    struct claimed jobs[CLAIM_MAX];
    while (!past(f)) {
        int n = jq_claim(&f->ts, CLAIM_MAX, 0, jobs);
        if (n < 0) {
            run_fail(f->ts.r, "claiming the history failed");
            break;
        }
        if (n == 0)
            break;
        for (int i = 0; i < n; i++)
            if (jq_complete(&f->ts, &jobs[i]) == 0)
                f->done++;
    }
    return NULL;
}

/* Run nconn fillers of body over the run's server. Returns the jobs they handled, or -1. */
static long fill(struct run *r, int nconn, void *(*body)(void *), long count, long delay,
                 int64_t deadline)
{
    struct filler *fs = calloc((size_t)nconn, sizeof *fs);
    atomic_long left = count;
    long total = 0;
    int started = 0;
    if (!fs) {
        run_fail(r, "out of memory");
        return -1;
    }
    for (int i = 0; i < nconn; i++) {
        fs[i].ts.r = r;
        fs[i].ts.idx = 1000 + i;
        fs[i].left = &left;
        fs[i].delay = delay;
        fs[i].deadline = deadline;
        if (conn_init_nth(&fs[i].ts.c, r->o, i, 120000) != 0 ||
            pthread_create(&fs[i].ts.thread, NULL, body, &fs[i]) != 0) {
            run_fail(r, "cannot start a filler");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(fs[i].ts.thread, NULL);
        total += fs[i].done;
    }
    for (int i = 0; i < nconn; i++)
        conn_free(&fs[i].ts.c);
    free(fs);
    return atomic_load(&r->abort) ? -1 : total;
}

static int64_t deadline_of(const struct run *r)
{
    return now_ns() + (int64_t)(r->o->timeout * 1e9);
}

int jobq_prefill(struct run *r)
{
    const struct opts *o = r->o;
    if (o->no_prefill || o->prefill <= 0)
        return 0;
    long n = fill(r, FILL_CONNS, enqueue_main, o->prefill, 0, deadline_of(r));
    if (n < 0)
        return -1;
    r->prefilled = n;
    if (n < o->prefill)
        fprintf(stderr, "jobq-bench: prefill stopped at the %.0f s bound: %ld of %ld jobs\n",
                o->timeout, n, o->prefill);
    return 0;
}

int jobq_history(struct run *r)
{
    const struct opts *o = r->o;
    int64_t deadline = deadline_of(r);
    long finished = 0;
    /* Rounds of at most 100,000 jobs keep the queue short while they are claimed. */
    while (finished < o->finished && now_ns() < deadline) {
        long round = o->finished - finished < 100000 ? o->finished - finished : 100000;
        long in = fill(r, FILL_CONNS, enqueue_main, round, 0, deadline);
        if (in < 0)
            return -1;
        long out = fill(r, FINISH_CONNS, finish_main, 0, 0, deadline);
        if (out < 0)
            return -1;
        finished += out;
        fprintf(stderr, "jobq-bench: history: %ld finished jobs\n", finished);
    }
    long delayed = fill(r, FILL_CONNS, enqueue_main, o->delayed, DELAY_SECONDS, deadline);
    if (delayed < 0)
        return -1;
    r->prefilled = finished + delayed;
    fprintf(stderr, "jobq-bench: history: %ld finished and %ld delayed jobs\n", finished, delayed);
    if (finished < o->finished || delayed < o->delayed)
        fprintf(stderr, "jobq-bench: history stopped at the %.0f s bound\n", o->timeout);
    return 0;
}
