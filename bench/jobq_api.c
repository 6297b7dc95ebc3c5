/* Calls of the jobq API shared by the scenarios and the table fillers. */
#include "jobq_api.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* POST body to path on c; Returns the status, or -1 after a connection failure (why in
 * c->err). */
int jq_post(struct conn *c, const char *path, const char *body, size_t len, struct http_resp *resp)
{
    if (http_call(c, "POST", path, body, len, resp) != 0)
        return -1;
    return resp->status;
}

void jq_report(struct tstate *ts, const char *what, int status, const struct http_resp *resp)
{
    if (status < 0)
        count_error(ts, "%s: %s", what, ts->c.err);
    else
        count_error(ts, "%s: HTTP %d %.*s", what, status, (int)(resp->len > 200 ? 200 : resp->len),
                    resp->body);
}

/* A batch body of n jobs into queue q: payload {"t": t}, delayed when delay > 0. Returns its
 * length. */
size_t jq_batch_body(char *out, size_t cap, const char *q, int n, int64_t t, long delay)
{
    size_t len = (size_t)snprintf(out, cap, "{\"jobs\":[");
    for (int i = 0; i < n && len < cap; i++) {
        if (delay > 0)
            len += (size_t)snprintf(out + len, cap - len,
                                    "%s{\"queue\":\"%s\",\"payload\":{\"t\":%" PRId64 "},"
                                    "\"delay_seconds\":%ld}",
                                    i ? "," : "", q, t, delay);
        else
            len += (size_t)snprintf(out + len, cap - len,
                                    "%s{\"queue\":\"%s\",\"payload\":{\"t\":%" PRId64 "}}",
                                    i ? "," : "", q, t);
    }
    if (len < cap)
        len += (size_t)snprintf(out + len, cap - len, "]}");
    return len < cap ? len : cap;
}

/* Claim up to max jobs into out[]. Returns the count (0: none), or -1 after counting an error. */
int jq_claim(struct tstate *ts, int max, int wait, struct claimed *out)
{
    char body[512];
    struct http_resp resp;
    int len = snprintf(body, sizeof body,
                       "{\"worker_id\":\"bench-%d-%d\",\"queue\":\"%s\",\"max_jobs\":%d,"
                       "\"lease_seconds\":600,\"wait_seconds\":%d}",
                       ts->role, ts->idx, ts->r->o->queue, max, wait);
    int st = jq_post(&ts->c, "/claim", body, (size_t)len, &resp);
    if (st != 200) {
        jq_report(ts, "claim", st, &resp);
        return -1;
    }
    int n = jscan_claim(resp.body, resp.len, out, max);
    if (n < 0)
        count_error(ts, "claim: unreadable answer %.*s", (int)(resp.len > 200 ? 200 : resp.len),
                    resp.body);
    return n;
}

int jq_complete(struct tstate *ts, const struct claimed *j)
{
    char path[64], body[256];
    struct http_resp resp;
    snprintf(path, sizeof path, "/jobs/%" PRId64 "/complete", j->id);
    int len = snprintf(body, sizeof body, "{\"lease_token\":\"%s\"}", j->token);
    int st = jq_post(&ts->c, path, body, (size_t)len, &resp);
    if (st != 200) {
        jq_report(ts, "complete", st, &resp);
        return -1;
    }
    return 0;
}

int jq_enqueue(struct tstate *ts, int64_t t)
{
    char body[256];
    struct http_resp resp;
    int len = snprintf(body, sizeof body, "{\"queue\":\"%s\",\"payload\":{\"t\":%" PRId64 "}}",
                       ts->r->o->queue, t);
    int st = jq_post(&ts->c, "/jobs", body, (size_t)len, &resp);
    if (st != 201) {
        jq_report(ts, "enqueue", st, &resp);
        return -1;
    }
    return 0;
}
