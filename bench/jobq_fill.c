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
    long count;        /* jobs to enqueue in all (numbers the jobs for spec->nkeys) */
    const struct jq_spec *spec;
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
        size_t len = jq_batch_body_spec(body, BODY_MAX, o->queue, k, f->count - n, f->spec);
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

/* Run nconn fillers of body over the run's server (enqueuers: count jobs of spec). Returns the
 * jobs they handled, or -1. */
static long fill(struct run *r, int nconn, void *(*body)(void *), long count,
                 const struct jq_spec *spec, int64_t deadline)
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
        fs[i].count = count;
        fs[i].spec = spec;
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
    struct jq_spec due = {.t = 1};
    long n = fill(r, FILL_CONNS, enqueue_main, o->prefill, &due, deadline_of(r));
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
    struct jq_spec due = {.t = 1}, delayed_spec = {.t = 1, .delay = DELAY_SECONDS};
    long finished = 0;
    /* Rounds of at most 100,000 jobs keep the queue short while they are claimed. */
    while (finished < o->finished && now_ns() < deadline) {
        long round = o->finished - finished < 100000 ? o->finished - finished : 100000;
        long in = fill(r, FILL_CONNS, enqueue_main, round, &due, deadline);
        if (in < 0)
            return -1;
        long out = fill(r, FINISH_CONNS, finish_main, 0, NULL, deadline);
        if (out < 0)
            return -1;
        finished += out;
        fprintf(stderr, "jobq-bench: history: %ld finished jobs\n", finished);
    }
    long delayed = fill(r, FILL_CONNS, enqueue_main, o->delayed, &delayed_spec, deadline);
    if (delayed < 0)
        return -1;
    r->prefilled = finished + delayed;
    fprintf(stderr, "jobq-bench: history: %ld finished and %ld delayed jobs\n", finished, delayed);
    if (finished < o->finished || delayed < o->delayed)
        fprintf(stderr, "jobq-bench: history stopped at the %.0f s bound\n", o->timeout);
    return 0;
}

/* Claim one job of the saturated key HOL_KEY (the first of its queued jobs) and hold it for a
 * day: from then on the key is saturated. Returns 0, or -1 after printing why. */
static int hold_one(struct tstate *ts)
{
    struct claimed job;
    int n = jq_claim_lease(ts, 1, 0, 86400, &job);
    if (n != 1 || !job.has_t || job.t != HOL_T_HOT) {
        run_fail(ts->r, "holding a job of %s: claimed %d job(s), not one of that key", HOL_KEY, n);
        return -1;
    }
    return 0;
}

/* Enqueue 10 jobs of one free key behind what is queued, then claim them one by one at once:
 * the latency of the first claim and the time until all 10 were claimed go into r->extra.
 * Every claim must bring one of them. Returns 0, or -1 after printing why. */
static int ten_at_once(struct tstate *ts)
{
    struct run *r = ts->r;
    struct jq_spec free_key = {.t = 1, .key = "bench-free"};
    struct claimed jobs[10];
    struct http_resp resp;
    char body[4096];
    size_t len = jq_batch_body_spec(body, sizeof body, r->o->queue, 10, 0, &free_key);
    int st = jq_post(&ts->c, "/jobs/batch", body, len, &resp);
    if (st != 201) {
        jq_report(ts, "ten free jobs", st, &resp);
        run_fail(r, "enqueueing the ten free jobs failed");
        return -1;
    }
    int64_t t0 = now_ns(), first = 0;
    for (int i = 0; i < 10; i++) {
        if (jq_claim(ts, 1, 0, &jobs[i]) != 1 || jobs[i].t != 1) {
            run_fail(r, "claim %d of the ten free jobs brought none of them", i + 1);
            return -1;
        }
        if (i == 0)
            first = now_ns() - t0;
    }
    int64_t all = now_ns() - t0;
    for (int i = 0; i < 10; i++)
        if (jq_complete(ts, &jobs[i]) != 0) {
            run_fail(r, "completing the ten free jobs failed");
            return -1;
        }
    snprintf(r->extra, sizeof r->extra, "\tfirst_claim_ms=%.3f\tten_claims_ms=%.3f",
             (double)first / 1e6, (double)all / 1e6);
    return 0;
}

int jobq_hol(struct run *r)
{
    const struct opts *o = r->o;
    int64_t deadline = deadline_of(r);
    struct tstate ts = {.r = r, .idx = 2000, .role = 1};
    int rc = -1;
    if (conn_init_nth(&ts.c, o, 0, 120000) != 0) {
        run_fail(r, "out of memory");
        return -1;
    }
    if (o->saturated > 0) {
        struct http_resp resp;
        int st = jq_put_limit(&ts.c, HOL_KEY, 1, &resp);
        if (st != 200) {
            jq_report(&ts, "PUT /limits/" HOL_KEY, st, &resp);
            run_fail(r, "setting the limit failed");
            goto out;
        }
        struct jq_spec hot = {.t = HOL_T_HOT, .priority = 10, .key = HOL_KEY};
        long n = fill(r, FILL_CONNS, enqueue_main, o->saturated, &hot, deadline);
        if (n < o->saturated) {
            run_fail(r, "enqueued %ld of %ld jobs of the saturated key", n, o->saturated);
            goto out;
        }
        if (hold_one(&ts) != 0)
            goto out;
    }
    if (ten_at_once(&ts) != 0)
        goto out;
    struct jq_spec free_keys = {.t = 1, .key = "bench-free", .nkeys = 16};
    long n = fill(r, FILL_CONNS, enqueue_main, o->prefill, &free_keys, deadline);
    if (n < 0)
        goto out;
    r->prefilled = n + (o->saturated > 0 ? o->saturated - 1 : 0);
    rc = 0;
out:
    conn_free(&ts.c);
    return rc;
}
