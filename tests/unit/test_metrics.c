/* metrics: counters by status, the latency histogram, queue gauges and label escaping. */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
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

TEST(request_counters_and_histogram)
{
    metrics_reset();
    metrics_request_done(200, 500);      /* 0.0005 s */
    metrics_request_done(200, 2000);     /* 0.002 s */
    metrics_request_done(404, 1000000);  /* 1 s: on the bucket bound */
    metrics_request_done(418, 90000000); /* other, past the last bound */
    char *text = metrics_text(0, NULL, 0, 3);
    CHECK(text != NULL);
    int ok = has_line(text, "jobq_http_requests_total{code=\"200\"} 2") &&
             has_line(text, "jobq_http_requests_total{code=\"404\"} 1") &&
             has_line(text, "jobq_http_requests_total{code=\"201\"} 0") &&
             has_line(text, "jobq_http_requests_total{code=\"other\"} 1") &&
             has_line(text, "jobq_http_request_duration_seconds_bucket{le=\"0.001\"} 1") &&
             has_line(text, "jobq_http_request_duration_seconds_bucket{le=\"0.005\"} 2") &&
             has_line(text, "jobq_http_request_duration_seconds_bucket{le=\"1\"} 3") &&
             has_line(text, "jobq_http_request_duration_seconds_bucket{le=\"60\"} 3") &&
             has_line(text, "jobq_http_request_duration_seconds_bucket{le=\"+Inf\"} 4") &&
             has_line(text, "jobq_http_request_duration_seconds_sum 91.002500") &&
             has_line(text, "jobq_http_request_duration_seconds_count 4") &&
             has_line(text, "# TYPE jobq_http_requests_total counter") &&
             has_line(text, "# TYPE jobq_http_request_duration_seconds histogram") &&
             has_line(text, "jobq_store_up 0") && has_line(text, "jobq_waiting_claims 3") &&
             strstr(text, "jobq_jobs{") == NULL;
    if (!ok)
        fprintf(stderr, "%s", text);
    free(text);
    CHECK(ok);
}

TEST(queue_gauges)
{
    metrics_reset();
    struct queue_stats rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].name = "default";
    rows[0].count[JOB_SCHEDULED] = 2;
    rows[0].count[JOB_QUEUED] = 3;
    rows[0].count[JOB_RUNNING] = 1;
    rows[0].oldest_queued_age = 17;
    rows[1].name = "we\"ird\\q\n";
    rows[1].count[JOB_CANCELLED] = 4;
    char *text = metrics_text(1, rows, 2, 0);
    CHECK(text != NULL);
    int ok = has_line(text, "jobq_jobs{queue=\"default\",status=\"queued\"} 5") &&
             has_line(text, "jobq_jobs{queue=\"default\",status=\"running\"} 1") &&
             has_line(text, "jobq_jobs{queue=\"default\",status=\"failed\"} 0") &&
             has_line(text, "jobq_queue_oldest_age_seconds{queue=\"default\"} 17") &&
             has_line(text, "jobq_jobs{queue=\"we\\\"ird\\\\q\\n\",status=\"cancelled\"} 4") &&
             has_line(text, "# TYPE jobq_jobs gauge") && has_line(text, "jobq_store_up 1") &&
             text[strlen(text) - 1] == '\n';
    if (!ok)
        fprintf(stderr, "%s", text);
    free(text);
    CHECK(ok);
}

TEST_MAIN(TEST_ENTRY(request_counters_and_histogram), TEST_ENTRY(queue_gauges))
