/* metrics: the route and claim-wait histograms, queue gauges, job counters, store figures and
 * label escaping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "router.h"
#include "testlib.h"

/* 1 when text has the exact line. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    }
    return 0;
}

/* The row of "METHOD PATTERN" in the route table. */
static size_t route_of(const char *method, const char *pattern)
{
    for (size_t i = 0; i < router_table_len; i++)
        if (strcmp(router_table[i].method, method) == 0 &&
            strcmp(router_table[i].pattern, pattern) == 0)
            return i;
    return router_table_len;
}

TEST(request_histogram_by_route_and_code)
{
    metrics_reset();
    size_t complete = route_of("POST", "/jobs/{id}/complete");
    CHECK(complete < router_table_len);
    metrics_request_done(complete, 200, 500);              /* 0.0005 s */
    metrics_request_done(complete, 200, 2000);             /* 0.002 s */
    metrics_request_done(complete, 409, 1000000);          /* 1 s: on the bucket bound */
    metrics_request_done(router_table_len, 404, 90000000); /* no route, past the last bound */
    metrics_request_done(router_table_len + 7, 418, 10);   /* no route, another status */
    struct metrics_scrape in = {.parked = 3,
                                .connections = 5,
                                .max_connections = 4096,
                                .streams = 2,
                                .max_streams = 256,
                                .stream_events = 12345678901ULL,
                                .stream_gaps = 1};
    char *text = metrics_text(&in);
    CHECK(text != NULL);
#define C "jobq_http_request_duration_seconds"
#define L "method=\"POST\",route=\"/jobs/{id}/complete\",code="
    int ok =
        has_line(text, "# TYPE " C " histogram") &&
        has_line(text, C "_bucket{" L "\"200\",le=\"0.001\"} 1") &&
        has_line(text, C "_bucket{" L "\"200\",le=\"0.005\"} 2") &&
        has_line(text, C "_bucket{" L "\"200\",le=\"+Inf\"} 2") &&
        has_line(text, C "_sum{" L "\"200\"} 0.002500") &&
        has_line(text, C "_count{" L "\"200\"} 2") &&
        has_line(text, C "_bucket{" L "\"409\",le=\"0.5\"} 0") &&
        has_line(text, C "_bucket{" L "\"409\",le=\"1\"} 1") &&
        has_line(text, C "_bucket{method=\"other\",route=\"other\",code=\"404\",le=\"60\"} 0") &&
        has_line(text, C "_bucket{method=\"other\",route=\"other\",code=\"404\",le=\"+Inf\"} 1") &&
        has_line(text, C "_sum{method=\"other\",route=\"other\",code=\"404\"} 90.000000") &&
        has_line(text, C "_count{method=\"other\",route=\"other\",code=\"other\"} 1") &&
        strstr(text, "code=\"201\"") == NULL && /* pairs never seen are left out */
        has_line(text, "jobq_store_up 0") && has_line(text, "jobq_waiting_claims 3") &&
        has_line(text, "jobq_http_connections 5") &&
        has_line(text, "jobq_http_connections_max 4096") && strstr(text, "jobq_jobs{") == NULL &&
        has_line(text, "# TYPE jobq_event_streams gauge") &&
        has_line(text, "jobq_event_streams 2") && has_line(text, "jobq_event_streams_max 256") &&
        has_line(text, "# TYPE jobq_event_stream_events_total counter") &&
        has_line(text, "jobq_event_stream_events_total 12345678901") &&
        has_line(text, "jobq_event_stream_gaps_total 1");
#undef C
#undef L
    if (!ok)
        fprintf(stderr, "%s", text);
    free(text);
    CHECK(ok);
}

TEST(claim_wait_histogram)
{
    metrics_reset();
    metrics_claim_answered(0, 1);
    metrics_claim_answered(2500000, 1);  /* 2.5 s parked, then a job */
    metrics_claim_answered(30000000, 0); /* a long poll that ran out */
    struct metrics_scrape in = {0};
    char *text = metrics_text(&in);
    CHECK(text != NULL);
#define W "jobq_claim_wait_seconds"
    int ok = has_line(text, "# TYPE " W " histogram") &&
             has_line(text, W "_bucket{result=\"jobs\",le=\"0.001\"} 1") &&
             has_line(text, W "_bucket{result=\"jobs\",le=\"2.5\"} 2") &&
             has_line(text, W "_count{result=\"jobs\"} 2") &&
             has_line(text, W "_sum{result=\"jobs\"} 2.500000") &&
             has_line(text, W "_bucket{result=\"empty\",le=\"10\"} 0") &&
             has_line(text, W "_bucket{result=\"empty\",le=\"30\"} 1") &&
             has_line(text, W "_count{result=\"empty\"} 1");
#undef W
    if (!ok)
        fprintf(stderr, "%s", text);
    free(text);
    CHECK(ok);
}

TEST(queue_gauges_counters_and_store)
{
    metrics_reset();
    struct queue_stats rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].name = "default";
    rows[0].count[JOB_QUEUED] = 5;
    rows[0].count[JOB_RUNNING] = 1;
    rows[0].oldest_queued_age = 17;
    rows[1].name = "we\"ird\\q\n";
    rows[1].count[JOB_CANCELLED] = 4;
    rows[1].count[JOB_BLOCKED] = 6;
    rows[1].paused = 1;
    struct counters_row counters[2];
    memset(counters, 0, sizeof counters);
    strcpy(counters[0].queue, COUNTERS_OTHER);
    counters[0].v[COUNTER_CLAIMED] = 9;
    strcpy(counters[1].queue, "default");
    counters[1].v[COUNTER_ENQUEUED] = 3;
    counters[1].v[COUNTER_TIMED_OUT] = 1;
    struct store_metric backend[2] = {{"jobq_test_things", "Things.", 0, 2.5},
                                      {"jobq_test_events_total", "Events.", 1, 7}};
    struct metrics_scrape in = {.store_ok = 1,
                                .rows = rows,
                                .n = 2,
                                .stats = {.commits = 10, .ops = 12, .retries = 1, .errors = 2},
                                .backend = backend,
                                .nbackend = 2,
                                .counters = counters,
                                .ncounters = 2};
    char *text = metrics_text(&in);
    CHECK(text != NULL);
    int ok =
        has_line(text, "jobq_jobs{queue=\"default\",status=\"queued\"} 5") &&
        has_line(text, "jobq_queue_paused{queue=\"default\"} 0") &&
        has_line(text, "jobq_queue_paused{queue=\"we\\\"ird\\\\q\\n\"} 1") &&
        has_line(text, "# TYPE jobq_queue_paused gauge") &&
        has_line(text, "jobq_jobs{queue=\"default\",status=\"running\"} 1") &&
        has_line(text, "jobq_jobs{queue=\"default\",status=\"failed\"} 0") &&
        has_line(text, "jobq_queue_oldest_age_seconds{queue=\"default\"} 17") &&
        has_line(text, "jobq_jobs{queue=\"we\\\"ird\\\\q\\n\",status=\"cancelled\"} 4") &&
        has_line(text, "jobq_jobs{queue=\"we\\\"ird\\\\q\\n\",status=\"blocked\"} 6") &&
        has_line(text, "# TYPE jobq_jobs gauge") && has_line(text, "jobq_store_up 1") &&
        has_line(text, "# TYPE jobq_jobs_enqueued_total counter") &&
        has_line(text, "jobq_jobs_enqueued_total{queue=\"default\"} 3") &&
        has_line(text, "jobq_jobs_timed_out_total{queue=\"default\"} 1") &&
        has_line(text, "jobq_jobs_claimed_total{queue=\"(other)\"} 9") &&
        has_line(text, "jobq_jobs_lease_expired_total{queue=\"(other)\"} 0") &&
        has_line(text, "jobq_store_commits_total 10") &&
        has_line(text, "jobq_store_ops_total 12") && has_line(text, "jobq_store_retries_total 1") &&
        has_line(text, "jobq_store_errors_total 2") &&
        has_line(text, "# TYPE jobq_test_things gauge") && has_line(text, "jobq_test_things 2.5") &&
        has_line(text, "# TYPE jobq_test_events_total counter") &&
        has_line(text, "jobq_test_events_total 7") && text[strlen(text) - 1] == '\n';
    if (!ok)
        fprintf(stderr, "%s", text);
    free(text);
    CHECK(ok);
}

/* The limit gauges: one series per limit key for the first METRICS_LIMITS_MAX limits, the
 * count of all of them, max_running absent when a limit has none, keys escaped. */
TEST(limit_gauges_are_bounded)
{
    metrics_reset();
    size_t n = METRICS_LIMITS_MAX + 50;
    struct limit *limits = calloc(n, sizeof *limits);
    CHECK(limits != NULL);
    for (size_t i = 0; i < n; i++) {
        snprintf(limits[i].key, sizeof limits[i].key, "k%03zu", i);
        limits[i].max_running = 2;
        limits[i].running = 1;
        limits[i].held = (int64_t)i;
        limits[i].paused_until = JOB_NONE;
    }
    snprintf(limits[0].key, sizeof limits[0].key, "a\"b\\*");
    limits[0].max_running = 0; /* a rate alone */
    limits[1].paused_until = 2000000000;
    struct metrics_scrape in = {.limits_ok = 1, .limits = limits, .nlimits = n};
    char *text = metrics_text(&in);
    CHECK(text != NULL);
    char last[64], past[64];
    snprintf(last, sizeof last, "jobq_limit_held_jobs{limit=\"k%03d\"} %d", METRICS_LIMITS_MAX - 1,
             METRICS_LIMITS_MAX - 1);
    snprintf(past, sizeof past, "{limit=\"k%03d\"}", METRICS_LIMITS_MAX);
    int ok = has_line(text, "# TYPE jobq_limits gauge") && has_line(text, "jobq_limits 150") &&
             has_line(text, "# TYPE jobq_limit_held_jobs gauge") &&
             has_line(text, "jobq_limit_running{limit=\"a\\\"b\\\\*\"} 1") &&
             !strstr(text, "jobq_limit_max_running{limit=\"a") &&
             has_line(text, "jobq_limit_max_running{limit=\"k001\"} 2") &&
             has_line(text, "jobq_limit_paused{limit=\"k001\"} 1") &&
             has_line(text, "jobq_limit_paused{limit=\"k002\"} 0") && has_line(text, last) &&
             !strstr(text, past);
    if (!ok)
        fprintf(stderr, "%s", text);
    free(text);
    free(limits);
    CHECK(ok);
}

TEST_MAIN(TEST_ENTRY(request_histogram_by_route_and_code), TEST_ENTRY(claim_wait_histogram),
          TEST_ENTRY(queue_gauges_counters_and_store), TEST_ENTRY(limit_gauges_are_bounded))
