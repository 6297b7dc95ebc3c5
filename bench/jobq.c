/* The jobq driver: keep-alive HTTP/1.1 against the API of /work/shared/API.md.
 *
 * Every job carries the generator's send time in its payload ({"t": ns}); the worker that
 * completes it measures enqueue -> complete from that (paced producers put the time the job
 * was scheduled for, so a late sender cannot hide its delay). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobq_api.h"
#include "run.h"

/* Producers: one job per request, at full speed or paced (opts.rate over all producers). */
static void *producer(void *arg)
{
    return produce_jobs(arg, jq_enqueue);
}

/* Batch producers: opts.batch jobs per request. */
static void *batch_producer(void *arg)
{
    struct tstate *ts = arg;
    const struct opts *o = ts->r->o;
    char *body = malloc(BODY_MAX);
    if (!body)
        return run_fail(ts->r, "out of memory");
    while (!run_over(ts->r)) {
        struct http_resp resp;
        backlog_take(ts->r, o->batch);
        size_t len = jq_batch_body(body, BODY_MAX, o->queue, o->batch, now_ns(), 0);
        int st = jq_post(&ts->c, "/jobs/batch", body, len, &resp);
        if (st != 201) {
            backlog_give(ts->r, o->batch);
            jq_report(ts, "batch enqueue", st, &resp);
        }
    }
    free(body);
    return NULL;
}

/* Workers: claim (max_jobs 1, or opts.max_jobs in the batch scenario) and complete.
 * drain and hol: latency is claim start -> complete answer, and an empty claim ends the worker
 * (hol: a job of the saturated key, which must never come, is an error);
 * lifecycle and batch: latency is enqueue -> complete answer, claims long-poll. */
static void *worker(void *arg)
{
    struct tstate *ts = arg;
    const struct opts *o = ts->r->o;
    int hol = strcmp(o->scenario, "hol") == 0;
    int drain = hol || strcmp(o->scenario, "drain") == 0;
    int max = strcmp(o->scenario, "batch") == 0 ? o->max_jobs : 1;
    struct claimed jobs[CLAIM_MAX];
    while (!run_over(ts->r)) {
        int64_t t0 = now_ns();
        int n = jq_claim(ts, max, drain ? 0 : o->wait, jobs);
        if (n == 0 && drain) {
            atomic_store(&ts->r->drained, 1);
            break;
        }
        for (int i = 0; i < n; i++) {
            if (hol && jobs[i].t == HOL_T_HOT)
                count_error(ts, "claimed job %" PRId64 " of the saturated key", jobs[i].id);
            if (jq_complete(ts, &jobs[i]) != 0)
                continue;
            backlog_give(ts->r, 1);
            int64_t done = now_ns();
            count_op(ts, done, drain ? done - t0 : done - jobs[i].t);
        }
    }
    return NULL;
}

/* Claim-only workers: claims per second (max_jobs 1, nothing completed). */
static void *claimer(void *arg)
{
    struct tstate *ts = arg;
    struct claimed job;
    while (!run_over(ts->r)) {
        int64_t t0 = now_ns();
        int n = jq_claim(ts, 1, 0, &job);
        if (n == 0) {
            atomic_store(&ts->r->drained, 1);
            break;
        }
        if (n > 0)
            count_op(ts, now_ns(), now_ns() - t0);
    }
    return NULL;
}

/* Long poll: one producer sends a job, waits until a parked worker answered it, pauses 1-5 ms,
 * and sends the next; the latency is enqueue start -> claim answer. */
static void *lp_producer(void *arg)
{
    return lp_produce(arg, jq_enqueue);
}

static void *lp_worker(void *arg)
{
    struct tstate *ts = arg;
    struct run *r = ts->r;
    struct claimed job;
    while (!run_over(r)) {
        int n = jq_claim(ts, 1, 30, &job);
        if (n <= 0)
            continue;
        int64_t t = now_ns();
        if (job.has_t && job.t > 0)
            count_op(ts, t, t - job.t);
        lp_answer(r);
        jq_complete(ts, &job);
    }
    return NULL;
}

/* Wake every parked long-poll worker: one job each (t = 0: not counted), through every server
 * (each wakes its own parked workers without waiting for another's notification). */
static int lp_finish(struct run *r)
{
    struct conn cs[SERVERS_MAX];
    struct http_resp resp;
    int n = r->o->naddrs, failed = 0;
    if (open_conns(r, cs, n, 30000) != 0)
        return -1;
    char *body = malloc(BODY_MAX);
    for (int i = 0; i < n; i++) {
        int st = -1;
        if (body) {
            size_t len = jq_batch_body(body, BODY_MAX, r->o->queue, r->o->workers, 0, 0);
            st = jq_post(&cs[i], "/jobs/batch", body, len, &resp);
        }
        if (st != 201) {
            fprintf(stderr, "jobq-bench: waking the parked workers failed (%d %s)\n", st,
                    cs[i].err);
            failed = 1;
        }
    }
    free(body);
    free_conns(cs, n);
    return failed ? -1 : 0;
}

static const struct driver drivers[] = {
    {NULL, producer, NULL, NULL},         /* enqueue */
    {jobq_prefill, NULL, worker, NULL},   /* drain */
    {NULL, producer, worker, NULL},       /* lifecycle */
    {NULL, batch_producer, worker, NULL}, /* batch */
    {jobq_prefill, NULL, claimer, NULL},  /* claim */
    {NULL, lp_producer, lp_worker, lp_finish},
    {jobq_history, NULL, NULL, NULL},
    {jobq_hol, NULL, worker, NULL},
};
static const char *const names[] = {"enqueue", "drain",    "lifecycle", "batch",
                                    "claim",   "longpoll", "history",   "hol"};

const struct driver *jobq_driver(const char *scenario)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(scenario, names[i]) == 0)
            return &drivers[i];
    return NULL;
}
