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

size_t jq_batch_body(char *out, size_t cap, const char *q, int n, int64_t t, long delay)
{
    struct jq_spec spec = {.t = t, .delay = delay};
    return jq_batch_body_spec(out, cap, q, n, 0, &spec);
}

/* A batch body of n jobs of spec into queue q. Returns its length. */
size_t jq_batch_body_spec(char *out, size_t cap, const char *q, int n, long first,
                          const struct jq_spec *spec)
{
    size_t len = (size_t)snprintf(out, cap, "{\"jobs\":[");
    for (int i = 0; i < n && len < cap; i++) {
        len += (size_t)snprintf(out + len, cap - len,
                                "%s{\"queue\":\"%s\",\"payload\":{\"t\":%" PRId64 "}", i ? "," : "",
                                q, spec->t);
        if (spec->delay > 0 && len < cap)
            len += (size_t)snprintf(out + len, cap - len, ",\"delay_seconds\":%ld", spec->delay);
        if (spec->priority != 0 && len < cap)
            len += (size_t)snprintf(out + len, cap - len, ",\"priority\":%d", spec->priority);
        if (spec->key && spec->nkeys > 0 && len < cap)
            len += (size_t)snprintf(out + len, cap - len, ",\"concurrency_key\":\"%s-%ld\"",
                                    spec->key, (first + i) % spec->nkeys);
        else if (spec->key && len < cap)
            len += (size_t)snprintf(out + len, cap - len, ",\"concurrency_key\":\"%s\"", spec->key);
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "}");
    }
    if (len < cap)
        len += (size_t)snprintf(out + len, cap - len, "]}");
    return len < cap ? len : cap;
}

int jq_put_limit(struct conn *c, const char *key, int max, struct http_resp *resp)
{
    char path[256], body[64];
    snprintf(path, sizeof path, "/limits/%s", key);
    int len = snprintf(body, sizeof body, "{\"max_running\":%d}", max);
    if (http_call(c, "PUT", path, body, (size_t)len, resp) != 0)
        return -1;
    return resp->status;
}

/* Claim up to max jobs into out[]. Returns the count (0: none), or -1 after counting an error. */
int jq_claim(struct tstate *ts, int max, int wait, struct claimed *out)
{
    return jq_claim_lease(ts, max, wait, 600, out);
}

int jq_claim_lease(struct tstate *ts, int max, int wait, int lease, struct claimed *out)
{
    char body[512];
    struct http_resp resp;
    int len = snprintf(body, sizeof body,
                       "{\"worker_id\":\"bench-%d-%d\",\"queue\":\"%s\",\"max_jobs\":%d,"
                       "\"lease_seconds\":%d,\"wait_seconds\":%d}",
                       ts->role, ts->idx, ts->r->o->queue, max, lease, wait);
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
