/* Prometheus metrics (see metrics.h). */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "handlers.h"
#include "jobjson.h"
#include "pending.h"
#include "reply.h"
#include "router.h"
#include "sse.h"
#include "store_schedule.h"
#include "store_webhook.h"
#include "ticker.h"

#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The statuses counted one by one; anything else is "other" (the last slot). */
static const unsigned codes[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 415, 500, 503};
#define NCODES (sizeof codes / sizeof codes[0])

/* Histogram upper bounds in microseconds; the last slot is +Inf. */
static const int64_t bounds_us[] = {1000,    5000,     10000,    25000,   50000,
                                    100000,  250000,   500000,   1000000, 2500000,
                                    5000000, 10000000, 30000000, 60000000};
#define NBOUNDS (sizeof bounds_us / sizeof bounds_us[0])

/* Routes told apart: the route table's rows up to ROUTES_MAX; the last slot is "other". */
#define ROUTES_MAX 63

/* One histogram: non-cumulative bucket counts (summed when written) and the sum. */
struct hist {
    atomic_uint_fast64_t buckets[NBOUNDS + 1];
    atomic_uint_fast64_t sum_us;
};

static struct hist requests[ROUTES_MAX + 1][NCODES + 1];
static struct hist claim_waits[2]; /* [got_jobs] */

static void hist_add(struct hist *h, int64_t us)
{
    if (us < 0)
        us = 0;
    size_t b = 0;
    while (b < NBOUNDS && us > bounds_us[b])
        b++;
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint_fast64_t)us, memory_order_relaxed);
}

static size_t route_slot(size_t route)
{
    return route < router_table_len && route < ROUTES_MAX ? route : ROUTES_MAX;
}

void metrics_request_done(size_t route, unsigned status, int64_t duration_us)
{
    size_t c = 0;
    while (c < NCODES && codes[c] != status)
        c++;
    hist_add(&requests[route_slot(route)][c], duration_us);
}

void metrics_claim_answered(int64_t parked_us, int got_jobs)
{
    hist_add(&claim_waits[got_jobs ? 1 : 0], parked_us);
}

static void hist_reset(struct hist *h)
{
    for (size_t i = 0; i <= NBOUNDS; i++)
        atomic_store(&h->buckets[i], 0);
    atomic_store(&h->sum_us, 0);
}

void metrics_reset(void)
{
    for (size_t r = 0; r <= ROUTES_MAX; r++)
        for (size_t c = 0; c <= NCODES; c++)
            hist_reset(&requests[r][c]);
    hist_reset(&claim_waits[0]);
    hist_reset(&claim_waits[1]);
}

static void sb_printf(struct jtext *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append the printf-style text (lines are short: a stack buffer, else one malloc). */
static void sb_printf(struct jtext *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
    } else if ((size_t)n < sizeof line) {
        jtext_put(b, line, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big) {
            b->oom = 1;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        jtext_put(b, big, (size_t)n);
        free(big);
    }
}

/* A label value with \, " and newline escaped, as the exposition format wants. */
static void sb_label(struct jtext *b, const char *v)
{
    while (*v) {
        size_t run = strcspn(v, "\\\"\n");
        jtext_put(b, v, run);
        v += run;
        if (*v) {
            jtext_put(b, *v == '\n' ? "\\n" : *v == '"' ? "\\\"" : "\\\\", 2);
            v++;
        }
    }
}

static void sb_head(struct jtext *b, const char *name, const char *type, const char *help)
{
    sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The lines of one histogram series; labels is "" or `a="x",b="y"` (already escaped). */
static void write_hist(struct jtext *b, const char *name, const char *labels, struct hist *h)
{
    const char *sep = *labels ? "," : "";
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= NBOUNDS; i++) {
        cumulative += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        if (i < NBOUNDS)
            sb_printf(b, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep,
                      (double)bounds_us[i] / 1e6, cumulative);
        else
            sb_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cumulative);
    }
    uint64_t sum = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
    const char *open = *labels ? "{" : "", *close = *labels ? "}" : "";
    sb_printf(b, "%s_sum%s%s%s %" PRIu64 ".%06" PRIu64 "\n", name, open, labels, close,
              sum / 1000000, sum % 1000000);
    sb_printf(b, "%s_count%s%s%s %" PRIu64 "\n", name, open, labels, close, cumulative);
}

static uint64_t hist_count(struct hist *h)
{
    uint64_t n = 0;
    for (size_t i = 0; i <= NBOUNDS; i++)
        n += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
    return n;
}

/* Only the (route, code) pairs that saw a request are written. */
static void write_requests(struct jtext *b)
{
    static const char name[] = "jobq_http_request_duration_seconds";
    sb_head(b, name, "histogram",
            "HTTP request latency by route (the route table's pattern; other: no route) and "
            "status code, long polls included.");
    for (size_t r = 0; r <= ROUTES_MAX; r++) {
        if (r < ROUTES_MAX && r >= router_table_len)
            continue;
        const char *method = r < ROUTES_MAX ? router_table[r].method : "other";
        const char *pattern = r < ROUTES_MAX ? router_table[r].pattern : "other";
        for (size_t c = 0; c <= NCODES; c++) {
            if (hist_count(&requests[r][c]) == 0)
                continue;
            char labels[256], code[16];
            if (c < NCODES)
                snprintf(code, sizeof code, "%u", codes[c]);
            else
                snprintf(code, sizeof code, "other");
            /* Patterns are ours: no character that needs escaping. */
            snprintf(labels, sizeof labels, "method=\"%s\",route=\"%s\",code=\"%s\"", method,
                     pattern, code);
            write_hist(b, name, labels, &requests[r][c]);
        }
    }
    static const char wait[] = "jobq_claim_wait_seconds";
    sb_head(b, wait, "histogram",
            "Time a claim spent parked (long poll) before its answer, 0 when it never parked, by "
            "whether the answer carried jobs.");
    write_hist(b, wait, "result=\"jobs\"", &claim_waits[1]);
    write_hist(b, wait, "result=\"empty\"", &claim_waits[0]);
}

static void write_queue_label(struct jtext *b, const char *name, const char *queue)
{
    jtext_put(b, name, strlen(name));
    jtext_put(b, "{queue=\"", 8);
    sb_label(b, queue);
    jtext_put(b, "\"", 1);
}

static void write_gauges(struct jtext *b, const struct queue_stats *rows, size_t n)
{
    static const enum job_status shown[] = {JOB_QUEUED, JOB_RUNNING,   JOB_SUCCEEDED,
                                            JOB_FAILED, JOB_CANCELLED, JOB_BLOCKED};
    sb_head(b, "jobq_jobs", "gauge", "Jobs by queue and status.");
    for (size_t i = 0; i < n; i++) {
        for (size_t s = 0; s < sizeof shown / sizeof shown[0]; s++) {
            int64_t v = rows[i].count[shown[s]];
            write_queue_label(b, "jobq_jobs", rows[i].name);
            sb_printf(b, ",status=\"%s\"} %" PRId64 "\n", job_status_name(shown[s]), v);
        }
    }
    sb_head(b, "jobq_queue_oldest_age_seconds", "gauge",
            "Seconds since the oldest due queued job became due.");
    for (size_t i = 0; i < n; i++) {
        write_queue_label(b, "jobq_queue_oldest_age_seconds", rows[i].name);
        sb_printf(b, "} %" PRId64 "\n", rows[i].oldest_queued_age);
    }
    sb_head(b, "jobq_queue_paused", "gauge", "1 when claims skip the queue (paused).");
    for (size_t i = 0; i < n; i++) {
        write_queue_label(b, "jobq_queue_paused", rows[i].name);
        sb_printf(b, "} %d\n", rows[i].paused ? 1 : 0);
    }
}

static void write_limit_label(struct jtext *b, const char *name, const char *limit)
{
    jtext_put(b, name, strlen(name));
    jtext_put(b, "{limit=\"", 8);
    sb_label(b, limit);
    jtext_put(b, "\"}", 2);
}

/* One gauge over the first METRICS_LIMITS_MAX limits: the value of each (skipped when
 * JOB_NONE). */
static void write_limit_gauge(struct jtext *b, const struct metrics_scrape *in, const char *name,
                              const char *help, int64_t (*value)(const struct limit *))
{
    sb_head(b, name, "gauge", help);
    for (size_t i = 0; i < in->nlimits && i < METRICS_LIMITS_MAX; i++) {
        int64_t v = value(&in->limits[i]);
        if (v == JOB_NONE)
            continue;
        write_limit_label(b, name, in->limits[i].key);
        sb_printf(b, " %" PRId64 "\n", v);
    }
}

static int64_t limit_max_running(const struct limit *l)
{
    return l->max_running ? l->max_running : JOB_NONE;
}

static int64_t limit_running(const struct limit *l)
{
    return l->running;
}

static int64_t limit_held(const struct limit *l)
{
    return l->held;
}

/* The store shows a pause only while it is in force. */
static int64_t limit_paused(const struct limit *l)
{
    return l->paused_until != JOB_NONE;
}

static void write_limits(struct jtext *b, const struct metrics_scrape *in)
{
    sb_head(b, "jobq_limits", "gauge",
            "Limits that exist (PUT /limits); the jobq_limit_* gauges show the first 100 by key.");
    sb_printf(b, "jobq_limits %zu\n", in->nlimits);
    write_limit_gauge(b, in, "jobq_limit_max_running",
                      "A limit's max_running, by limit key (an exact key or a pattern ending in "
                      "*); absent when it has none.",
                      limit_max_running);
    write_limit_gauge(b, in, "jobq_limit_running",
                      "Jobs running now whose concurrency key the limit governs, by limit key.",
                      limit_running);
    write_limit_gauge(b, in, "jobq_limit_held_jobs",
                      "Due queued jobs held back by the limit, by limit key: jobs of the keys "
                      "it governs that a claim passed by because the key had no room "
                      "(max_running, rate or pause).",
                      limit_held);
    write_limit_gauge(b, in, "jobq_limit_paused",
                      "1 while a key the limit governs is paused (snooze with pause_key), by "
                      "limit key.",
                      limit_paused);
}

static void write_counters(struct jtext *b, const struct counters_row *rows, size_t n)
{
    for (int c = 0; c < COUNTER_COUNT; c++) {
        char name[64];
        snprintf(name, sizeof name, "jobq_jobs_%s_total", counter_name((enum counter)c));
        char help[256];
        snprintf(help, sizeof help,
                 "%s By queue, counted by this process (queue=\"%s\": "
                 "queues past the first %d).",
                 counter_help((enum counter)c), COUNTERS_OTHER, COUNTERS_QUEUES_MAX);
        sb_head(b, name, "counter", help);
        for (size_t i = 0; i < n; i++) {
            write_queue_label(b, name, rows[i].queue);
            sb_printf(b, "} %" PRIu64 "\n", rows[i].v[c]);
        }
    }
}

static void write_schedules(struct jtext *b, const struct metrics_scrape *in)
{
    if (in->schedules_ok) {
        sb_head(b, "jobq_schedules", "gauge", "Schedules that exist (PUT /schedules).");
        sb_printf(b, "jobq_schedules %zu\n", in->nschedules);
    }
    sb_head(b, "jobq_schedule_ticks_enqueued_total", "counter",
            "Schedule ticks whose job this process created.");
    sb_printf(b, "jobq_schedule_ticks_enqueued_total %" PRIu64 "\n", in->ticks_enqueued);
    sb_head(b, "jobq_schedule_ticks_skipped_total", "counter",
            "Schedule ticks this process did not enqueue because the previous tick's job was "
            "still queued, blocked or running (overlap skip).");
    sb_printf(b, "jobq_schedule_ticks_skipped_total %" PRIu64 "\n", in->ticks_skipped);
    sb_head(b, "jobq_schedule_ticks_missed_total", "counter",
            "Schedule ticks missed while no jobqd ran that this process did not enqueue "
            "(catch_up none or latest, or past the 1000 of all).");
    sb_printf(b, "jobq_schedule_ticks_missed_total %" PRIu64 "\n", in->ticks_missed);
}

/* One series per subscription of the gauge or counter `name`, its value by field. */
static void write_webhook_series(struct jtext *b, const struct metrics_scrape *in, const char *name,
                                 const char *type, const char *help, size_t offset)
{
    sb_head(b, name, type, help);
    for (size_t i = 0; i < in->nwebhooks; i++) {
        jtext_put(b, name, strlen(name));
        jtext_put(b, "{webhook=\"", 10);
        sb_label(b, in->webhooks[i].name);
        int64_t v;
        memcpy(&v, (const char *)&in->webhooks[i] + offset, sizeof v);
        sb_printf(b, "\"} %" PRId64 "\n", v);
    }
}

static void write_webhooks(struct jtext *b, const struct metrics_scrape *in)
{
    write_webhook_series(b, in, "jobq_webhook_deliveries_total", "counter",
                         "Webhook attempts answered 2xx, by every process sharing the store.",
                         offsetof(struct whdeliver_gauge, deliveries));
    write_webhook_series(b, in, "jobq_webhook_failures_total", "counter",
                         "Webhook attempts that failed (no answer or not 2xx), by every "
                         "process sharing the store.",
                         offsetof(struct whdeliver_gauge, failures));
    write_webhook_series(b, in, "jobq_webhook_failed_events_total", "counter",
                         "Events given up after failing for 3 days.",
                         offsetof(struct whdeliver_gauge, failed_events));
    write_webhook_series(b, in, "jobq_webhook_lag_events", "gauge",
                         "Events waiting to be delivered (counted up to 1000).",
                         offsetof(struct whdeliver_gauge, lag_events));
    write_webhook_series(b, in, "jobq_webhook_lag_seconds", "gauge",
                         "Age of the oldest event waiting to be delivered; 0 when none waits.",
                         offsetof(struct whdeliver_gauge, lag_seconds));
}

static void write_store(struct jtext *b, const struct metrics_scrape *in)
{
    const struct store_stats *ss = &in->stats;
    sb_head(b, "jobq_store_commits_total", "counter", "Write transactions committed.");
    sb_printf(b, "jobq_store_commits_total %" PRIu64 "\n", ss->commits);
    sb_head(b, "jobq_store_ops_total", "counter",
            "Write operations committed (per commit: the group size).");
    sb_printf(b, "jobq_store_ops_total %" PRIu64 "\n", ss->ops);
    sb_head(b, "jobq_store_retries_total", "counter",
            "Transactions run again after contention or a lost connection.");
    sb_printf(b, "jobq_store_retries_total %" PRIu64 "\n", ss->retries);
    sb_head(b, "jobq_store_errors_total", "counter",
            "Store calls that ended busy, unavailable or in error (answered 503 or 500).");
    sb_printf(b, "jobq_store_errors_total %" PRIu64 "\n", ss->errors);
    for (size_t i = 0; i < in->nbackend; i++) {
        const struct store_metric *m = &in->backend[i];
        sb_head(b, m->name, m->counter ? "counter" : "gauge", m->help);
        sb_printf(b, "%s %.17g\n", m->name, m->value);
    }
}

char *metrics_text(const struct metrics_scrape *in)
{
    /* One allocation for the usual text: about 70 bytes a line, 7 lines per queue of the
     * gauges and 8 per queue of the counters, plus the histograms. */
    struct jtext b = {0};
    b.cap = 65536 + 70 * (7 * in->n + COUNTER_COUNT * in->ncounters) + 300 * 4 * METRICS_LIMITS_MAX;
    if (!(b.p = malloc(b.cap)))
        return NULL;
    write_requests(&b);
    sb_head(&b, "jobq_store_up", "gauge", "1 when the last read of the store succeeded.");
    sb_printf(&b, "jobq_store_up %d\n", in->store_ok ? 1 : 0);
    if (in->store_ok)
        write_gauges(&b, in->rows, in->n);
    if (in->limits_ok)
        write_limits(&b, in);
    write_schedules(&b, in);
    write_webhooks(&b, in);
    write_counters(&b, in->counters, in->ncounters);
    write_store(&b, in);
    sb_head(&b, "jobq_waiting_claims", "gauge", "Long-poll claims parked now.");
    sb_printf(&b, "jobq_waiting_claims %zu\n", in->parked);
    sb_head(&b, "jobq_http_connections", "gauge",
            "Client connections open now (parked long polls included).");
    sb_printf(&b, "jobq_http_connections %zu\n", in->connections);
    sb_head(&b, "jobq_http_connections_max", "gauge",
            "The limit of client connections "
            "(--max-connections).");
    sb_printf(&b, "jobq_http_connections_max %zu\n", in->max_connections);
    sb_head(&b, "jobq_event_streams", "gauge", "GET /events streams open now.");
    sb_printf(&b, "jobq_event_streams %zu\n", in->streams);
    sb_head(&b, "jobq_event_streams_max", "gauge",
            "The limit of GET /events streams (--events-streams).");
    sb_printf(&b, "jobq_event_streams_max %zu\n", in->max_streams);
    sb_head(&b, "jobq_event_stream_events_total", "counter",
            "Events this process wrote to GET /events streams.");
    sb_printf(&b, "jobq_event_stream_events_total %" PRIu64 "\n", in->stream_events);
    sb_head(&b, "jobq_event_stream_gaps_total", "counter",
            "Gap messages this process wrote to GET /events streams (a reader whose cursor was "
            "older than the log).");
    sb_printf(&b, "jobq_event_stream_gaps_total %" PRIu64 "\n", in->stream_gaps);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* Client connections open now on the daemon that serves conn. */
static size_t open_connections(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    const union MHD_DaemonInfo *di =
        ci ? MHD_get_daemon_info(ci->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    return di ? di->num_connections : 0;
}

/* The store's part of a scrape: the queues, then the limits. */
struct metrics_read {
    struct queues_read q; /* first */
    enum store_result limits_result;
    struct limit *limits; /* nlimits of them when limits_result is STORE_OK; owned */
    size_t nlimits;
    enum store_result schedules_result;
    size_t nschedules;
};

static enum store_result metrics_read_run(struct pending_read *r, struct store *s)
{
    struct metrics_read *m = (struct metrics_read *)r;
    int64_t now = clock_now();
    m->limits_result = store_limits(s, NULL, now, &m->limits, &m->nlimits);
    m->schedules_result = store_schedules_count(s, &m->nschedules);
    return store_queues(s, now, &m->q.rows, &m->q.n);
}

static void metrics_read_free(void *arg)
{
    struct metrics_read *m = arg;
    if (!m)
        return;
    queues_read_clear(&m->q);
    free(m->limits);
    free(m);
}

enum MHD_Result handle_metrics(struct request *rq)
{
    struct metrics_read *m = rq->state;
    if (!m) /* the store's part: off the HTTP threads */
        return pending_read_start(rq, sizeof *m, metrics_read_run, metrics_read_free);
    struct queues_read *q = &m->q;
    struct store *store = rq->app->store;
    struct store_metric backend[STORE_METRICS_MAX];
    struct metrics_scrape in = {.store_ok = q->r.result == STORE_OK,
                                .rows = q->rows,
                                .n = q->n,
                                .limits_ok = m->limits_result == STORE_OK,
                                .limits = m->limits,
                                .nlimits = m->nlimits,
                                .schedules_ok = m->schedules_result == STORE_OK,
                                .nschedules = m->nschedules,
                                .parked = waitq_parked(rq->app->waitq),
                                .connections = open_connections(rq->conn),
                                .max_connections = (size_t)rq->app->cfg->max_connections,
                                .backend = backend};
    struct ticker_counts ticks;
    ticker_counts(&ticks);
    in.ticks_enqueued = ticks.enqueued;
    in.ticks_skipped = ticks.skipped;
    in.ticks_missed = ticks.missed;
    struct sse_counts sc;
    sse_hub_counts(rq->app->streams, &sc);
    in.streams = (size_t)sc.open;
    in.max_streams = (size_t)sc.max;
    in.stream_events = sc.events;
    in.stream_gaps = sc.gaps;
    store_read_stats(store, &in.stats);
    in.nbackend = store_metrics(store, backend);
    struct counters_row *counters = counters_snapshot(&in.ncounters);
    in.counters = counters;
    struct whdeliver_gauge *hooks = malloc(STORE_WEBHOOKS_MAX * sizeof *hooks);
    in.nwebhooks = hooks ? whdeliver_gauges(rq->app->webhooks, hooks, STORE_WEBHOOKS_MAX) : 0;
    in.webhooks = hooks;
    char *text = metrics_text(&in);
    free(hooks);
    free(counters);
    if (!text)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    return reply_text_take(rq, MHD_HTTP_OK, METRICS_TYPE, text, strlen(text));
}
