/* The beanstalkd driver: its text protocol (put / reserve-with-timeout / delete) on the
 * default tube, one connection per thread. Job bodies are {"t": ns}, like jobq's payloads, so
 * the latencies mean the same thing: put -> delete answered, or put -> reserve answered. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define FILL_PIPELINE 100 /* puts sent before their answers are read, when filling */
#define FILL_CONNS 4
#define TTR 600

struct bjob {
    long long id;
    int64_t t;
};

static void report(struct tstate *ts, const char *what, const char *line)
{
    if (line)
        count_error(ts, "%s: %s", what, line);
    else
        count_error(ts, "%s: %s", what, ts->c.err);
}

/* Append a put of a job with time t to out. Returns the new length. */
static size_t put_cmd(char *out, size_t len, size_t cap, int64_t t)
{
    char body[64];
    int bl = snprintf(body, sizeof body, "{\"t\":%" PRId64 "}", t);
    return len + (size_t)snprintf(out + len, cap - len, "put 0 0 %d %d\r\n%s\r\n", TTR, bl, body);
}

static int put(struct tstate *ts, int64_t t)
{
    char cmd[128], *line;
    size_t len = put_cmd(cmd, 0, sizeof cmd, t);
    if (conn_send(&ts->c, cmd, len) != 0 || conn_line(&ts->c, &line) < 0) {
        report(ts, "put", NULL);
        return -1;
    }
    if (strncmp(line, "INSERTED ", 9) != 0) {
        report(ts, "put", line);
        return -1;
    }
    return 0;
}

/* Reserve with a timeout. Returns 1 with *j, 0 when none came, or -1. */
static int reserve(struct tstate *ts, int timeout, struct bjob *j)
{
    char cmd[64], *line, *data;
    int len = snprintf(cmd, sizeof cmd, "reserve-with-timeout %d\r\n", timeout);
    if (conn_send(&ts->c, cmd, (size_t)len) != 0 || conn_line(&ts->c, &line) < 0) {
        report(ts, "reserve", NULL);
        return -1;
    }
    if (strcmp(line, "TIMED_OUT") == 0 || strcmp(line, "DEADLINE_SOON") == 0)
        return 0;
    unsigned long bytes;
    if (sscanf(line, "RESERVED %lld %lu", &j->id, &bytes) != 2) {
        report(ts, "reserve", line);
        return -1;
    }
    if (conn_block(&ts->c, bytes, &data) != 0) {
        report(ts, "reserve", NULL);
        return -1;
    }
    const char *p = strstr(data, "\"t\":");
    j->t = p ? strtoll(p + 4, NULL, 10) : 0;
    return 1;
}

static int delete_job(struct tstate *ts, const struct bjob *j)
{
    char cmd[64], *line;
    int len = snprintf(cmd, sizeof cmd, "delete %lld\r\n", j->id);
    if (conn_send(&ts->c, cmd, (size_t)len) != 0 || conn_line(&ts->c, &line) < 0) {
        report(ts, "delete", NULL);
        return -1;
    }
    if (strcmp(line, "DELETED") != 0) {
        report(ts, "delete", line);
        return -1;
    }
    return 0;
}

static void *producer(void *arg)
{
    return produce_jobs(arg, put);
}

static void *worker(void *arg)
{
    struct tstate *ts = arg;
    const struct opts *o = ts->r->o;
    int drain = strcmp(o->scenario, "drain") == 0;
    struct bjob j;
    while (!run_over(ts->r)) {
        int64_t t0 = now_ns();
        int got = reserve(ts, drain ? 0 : (o->wait > 0 ? o->wait : 1), &j);
        if (got == 0 && drain)
            break;
        if (got <= 0 || delete_job(ts, &j) != 0)
            continue;
        backlog_give(ts->r, 1);
        int64_t done = now_ns();
        count_op(ts, done, drain ? done - t0 : done - j.t);
    }
    return NULL;
}

static void *lp_producer(void *arg)
{
    return lp_produce(arg, put);
}

static void *lp_worker(void *arg)
{
    struct tstate *ts = arg;
    struct run *r = ts->r;
    struct bjob j;
    while (!run_over(r)) {
        if (reserve(ts, 30, &j) <= 0)
            continue;
        int64_t t = now_ns();
        if (j.t > 0)
            count_op(ts, t, t - j.t);
        lp_answer(r);
        delete_job(ts, &j);
    }
    return NULL;
}

/* Put n jobs (t = t) on ts's connection, FILL_PIPELINE at a time. Returns the count put. */
static long put_many(struct tstate *ts, long n, int64_t t, int64_t deadline)
{
    char *buf = malloc(FILL_PIPELINE * 64);
    long done = 0;
    while (buf && done < n && now_ns() < deadline) {
        int k = n - done < FILL_PIPELINE ? (int)(n - done) : FILL_PIPELINE;
        size_t len = 0;
        for (int i = 0; i < k; i++)
            len = put_cmd(buf, len, FILL_PIPELINE * 64, t);
        if (conn_send(&ts->c, buf, len) != 0)
            break;
        for (int i = 0; i < k; i++) {
            char *line = NULL;
            if (conn_line(&ts->c, &line) < 0 || strncmp(line, "INSERTED ", 9) != 0) {
                report(ts, "fill", line);
                free(buf);
                return done;
            }
            done++;
        }
    }
    free(buf);
    return done;
}

struct filler {
    struct tstate ts;
    long n, done;
    int64_t deadline;
};

static void *fill_main(void *arg)
{
    struct filler *f = arg;
    f->done = put_many(&f->ts, f->n, 1, f->deadline);
    return NULL;
}

static int prefill(struct run *r)
{
    const struct opts *o = r->o;
    if (o->no_prefill || o->prefill <= 0)
        return 0;
    struct filler fs[FILL_CONNS];
    memset(fs, 0, sizeof fs);
    int64_t deadline = now_ns() + (int64_t)(o->timeout * 1e9);
    int started = 0;
    for (int i = 0; i < FILL_CONNS; i++) {
        fs[i].ts.r = r;
        fs[i].n = o->prefill / FILL_CONNS + (i < o->prefill % FILL_CONNS);
        fs[i].deadline = deadline;
        if (conn_init_nth(&fs[i].ts.c, o, i, 120000) != 0 ||
            pthread_create(&fs[i].ts.thread, NULL, fill_main, &fs[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(fs[i].ts.thread, NULL);
        r->prefilled += fs[i].done;
    }
    for (int i = 0; i < FILL_CONNS; i++)
        conn_free(&fs[i].ts.c);
    if (started < FILL_CONNS || r->prefilled == 0) {
        run_fail(r, "filling beanstalkd failed");
        return -1;
    }
    return 0;
}

/* Wake every waiting long-poll worker: one job each (t = 0: not counted). */
static int lp_finish(struct run *r)
{
    struct tstate ts;
    memset(&ts, 0, sizeof ts);
    ts.r = r;
    if (conn_init_nth(&ts.c, r->o, 0, 30000) != 0)
        return -1;
    long n = put_many(&ts, r->o->workers, 0, now_ns() + 30000000000LL);
    conn_free(&ts.c);
    return n == r->o->workers ? 0 : -1;
}

static const struct driver drivers[] = {
    {NULL, producer, NULL, NULL},   /* enqueue */
    {prefill, NULL, worker, NULL},  /* drain */
    {NULL, producer, worker, NULL}, /* lifecycle */
    {NULL, lp_producer, lp_worker, lp_finish},
};
static const char *const names[] = {"enqueue", "drain", "lifecycle", "longpoll"};

const struct driver *beanstalkd_driver(const char *scenario)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(scenario, names[i]) == 0)
            return &drivers[i];
    return NULL;
}
