/* Prometheus metrics (see metrics.h). */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "handlers.h"
#include "reply.h"

#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The statuses counted one by one; anything else is "other" (the last slot). */
static const unsigned codes[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 415, 500, 503};
#define NCODES (sizeof codes / sizeof codes[0])

/* Histogram upper bounds in microseconds; the last slot is +Inf. */
static const int64_t bounds_us[] = {1000,    5000,     10000,    25000,   50000,
                                    100000,  250000,   500000,   1000000, 2500000,
                                    5000000, 10000000, 30000000, 60000000};
#define NBOUNDS (sizeof bounds_us / sizeof bounds_us[0])

static atomic_uint_fast64_t requests[NCODES + 1];
static atomic_uint_fast64_t buckets[NBOUNDS + 1]; /* not cumulative; summed when written */
static atomic_uint_fast64_t duration_sum_us;

void metrics_request_done(unsigned status, int64_t duration_us)
{
    size_t c = 0;
    while (c < NCODES && codes[c] != status)
        c++;
    atomic_fetch_add_explicit(&requests[c], 1, memory_order_relaxed);
    if (duration_us < 0)
        duration_us = 0;
    size_t b = 0;
    while (b < NBOUNDS && duration_us > bounds_us[b])
        b++;
    atomic_fetch_add_explicit(&buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&duration_sum_us, (uint_fast64_t)duration_us, memory_order_relaxed);
}

void metrics_reset(void)
{
    for (size_t i = 0; i <= NCODES; i++)
        atomic_store(&requests[i], 0);
    for (size_t i = 0; i <= NBOUNDS; i++)
        atomic_store(&buckets[i], 0);
    atomic_store(&duration_sum_us, 0);
}

/* A growing text buffer; after a failed allocation it stays failed. */
struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    for (int tries = 0; !b->oom && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

/* A label value with \, " and newline escaped, as the exposition format wants. */
static void sb_label(struct sbuf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\')
            sb_printf(b, "\\\\");
        else if (*v == '"')
            sb_printf(b, "\\\"");
        else if (*v == '\n')
            sb_printf(b, "\\n");
        else
            sb_printf(b, "%c", *v);
    }
}

static void write_requests(struct sbuf *b)
{
    sb_printf(b, "# HELP jobq_http_requests_total HTTP requests answered, by status code.\n"
                 "# TYPE jobq_http_requests_total counter\n");
    for (size_t c = 0; c <= NCODES; c++) {
        uint64_t v = atomic_load_explicit(&requests[c], memory_order_relaxed);
        if (c < NCODES)
            sb_printf(b, "jobq_http_requests_total{code=\"%u\"} %" PRIu64 "\n", codes[c], v);
        else
            sb_printf(b, "jobq_http_requests_total{code=\"other\"} %" PRIu64 "\n", v);
    }
    sb_printf(b, "# HELP jobq_http_request_duration_seconds HTTP request latency, long polls "
                 "included.\n"
                 "# TYPE jobq_http_request_duration_seconds histogram\n");
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= NBOUNDS; i++) {
        cumulative += atomic_load_explicit(&buckets[i], memory_order_relaxed);
        if (i < NBOUNDS)
            sb_printf(b, "jobq_http_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
                      (double)bounds_us[i] / 1e6, cumulative);
        else
            sb_printf(b, "jobq_http_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n",
                      cumulative);
    }
    uint64_t sum = atomic_load_explicit(&duration_sum_us, memory_order_relaxed);
    sb_printf(b, "jobq_http_request_duration_seconds_sum %" PRIu64 ".%06" PRIu64 "\n",
              sum / 1000000, sum % 1000000);
    sb_printf(b, "jobq_http_request_duration_seconds_count %" PRIu64 "\n", cumulative);
}

static void write_queues(struct sbuf *b, const struct queue_stats *rows, size_t n)
{
    static const enum job_status shown[] = {JOB_QUEUED, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED,
                                            JOB_CANCELLED};
    sb_printf(b, "# HELP jobq_jobs Jobs by queue and status.\n# TYPE jobq_jobs gauge\n");
    for (size_t i = 0; i < n; i++) {
        for (size_t s = 0; s < sizeof shown / sizeof shown[0]; s++) {
            int64_t v = rows[i].count[shown[s]];
            if (shown[s] == JOB_QUEUED)
                v += rows[i].count[JOB_SCHEDULED];
            sb_printf(b, "jobq_jobs{queue=\"");
            sb_label(b, rows[i].name);
            sb_printf(b, "\",status=\"%s\"} %" PRId64 "\n", job_status_name(shown[s]), v);
        }
    }
    sb_printf(b, "# HELP jobq_queue_oldest_age_seconds Seconds since the oldest due queued job "
                 "became due.\n# TYPE jobq_queue_oldest_age_seconds gauge\n");
    for (size_t i = 0; i < n; i++) {
        sb_printf(b, "jobq_queue_oldest_age_seconds{queue=\"");
        sb_label(b, rows[i].name);
        sb_printf(b, "\"} %" PRId64 "\n", rows[i].oldest_queued_age);
    }
}

char *metrics_text(int store_ok, const struct queue_stats *rows, size_t n, size_t parked)
{
    struct sbuf b = {0};
    write_requests(&b);
    sb_printf(&b,
              "# HELP jobq_store_up 1 when the last read of the store succeeded.\n"
              "# TYPE jobq_store_up gauge\njobq_store_up %d\n",
              store_ok ? 1 : 0);
    if (store_ok)
        write_queues(&b, rows, n);
    sb_printf(&b,
              "# HELP jobq_waiting_claims Long-poll claims parked now.\n"
              "# TYPE jobq_waiting_claims gauge\njobq_waiting_claims %zu\n",
              parked);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* Append the store's write counters to text (consumed); NULL when out of memory. */
static char *with_store_stats(char *text, const struct store_stats *ss)
{
    size_t len = strlen(text);
    struct sbuf b = {text, len, len + 1, 0};
    sb_printf(&b,
              "# HELP jobq_store_commits_total Write transactions committed.\n"
              "# TYPE jobq_store_commits_total counter\njobq_store_commits_total %" PRIu64 "\n"
              "# HELP jobq_store_ops_total Write operations committed (per commit: the group "
              "size).\n"
              "# TYPE jobq_store_ops_total counter\njobq_store_ops_total %" PRIu64 "\n",
              ss->commits, ss->ops);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

enum MHD_Result handle_metrics(struct request *rq)
{
    int64_t now = clock_now();
    struct queue_stats *rows = NULL;
    size_t n = 0;
    struct store_stats ss;
    store_read_stats(rq->app->store, &ss);
    enum store_result r = store_queues(rq->app->store, now, &rows, &n);
    char *text = metrics_text(r == STORE_OK, rows, n, waitq_parked(rq->app->waitq));
    if (text)
        text = with_store_stats(text, &ss);
    if (r == STORE_OK)
        queue_stats_free(rows, n);
    if (!text)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    enum MHD_Result res = reply_text(rq, MHD_HTTP_OK, METRICS_TYPE, text, strlen(text));
    free(text);
    return res;
}
