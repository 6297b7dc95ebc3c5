/* The SQS driver: jobq's SQS listener (docs/sqs.md) over keep-alive HTTP/1.1 in the AWS JSON
 * 1.0 protocol, as an SDK speaks it but without an SDK's own cost (and unsigned: the server
 * runs without authentication). One scenario, lifecycle: producers SendMessage one message
 * each, whose body is the send time (ns); workers ReceiveMessage one (WaitTimeSeconds
 * opts.wait) and DeleteMessage it, and count enqueue -> delete answer, as the jobq driver's
 * lifecycle counts enqueue -> complete. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobq_api.h"
#include "run.h"

#define SQS_TYPE "application/x-amz-json-1.0"
#define URL_MAX 512

/* The queue's URL, from CreateQueue in prepare (one run per process). */
static char queue_url[URL_MAX];

/* POST an SQS action with body (len bytes) on c. Returns the HTTP status, or -1 after a
 * connection failure (why in c->err). */
static int sqs_post(struct conn *c, const char *action, const char *body, size_t len,
                    struct http_resp *resp)
{
    char target[96];
    snprintf(target, sizeof target, "X-Amz-Target: AmazonSQS.%s\r\n", action);
    if (http_call_as(c, "POST", "/", SQS_TYPE, target, body, len, resp) != 0)
        return -1;
    return resp->status;
}

/* The string member "name" of the answer s (len bytes) into out (cap bytes, no escapes
 * expected: the generator's bodies and jobq's handles have none). Returns 0, or -1 when it
 * is absent, escaped or too long. */
static int member(const char *s, size_t len, const char *name, char *out, size_t cap)
{
    char key[64];
    int kl = snprintf(key, sizeof key, "\"%s\":\"", name);
    const char *p = memmem(s, len, key, (size_t)kl);
    if (!p)
        return -1;
    p += kl;
    const char *e = memchr(p, '"', (size_t)(s + len - p));
    if (!e || (size_t)(e - p) >= cap || memchr(p, '\\', (size_t)(e - p)))
        return -1;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return 0;
}

static int prepare(struct run *r)
{
    struct conn c;
    struct http_resp resp;
    if (conn_init_nth(&c, r->o, 0, 30000) != 0)
        return -1;
    char body[256];
    int n = snprintf(body, sizeof body, "{\"QueueName\":\"%s\"}", r->o->queue);
    int st = sqs_post(&c, "CreateQueue", body, (size_t)n, &resp);
    int bad = st != 200 || member(resp.body, resp.len, "QueueUrl", queue_url, sizeof queue_url);
    if (bad)
        fprintf(stderr, "jobq-bench: sqs CreateQueue failed (%d %s)\n", st, c.err);
    conn_free(&c);
    return bad ? -1 : 0;
}

static int send_one(struct tstate *ts, int64_t t)
{
    char body[URL_MAX + 128];
    struct http_resp resp;
    int n = snprintf(body, sizeof body, "{\"QueueUrl\":\"%s\",\"MessageBody\":\"%" PRId64 "\"}",
                     queue_url, t);
    int st = sqs_post(&ts->c, "SendMessage", body, (size_t)n, &resp);
    if (st != 200) {
        jq_report(ts, "sqs SendMessage", st, &resp);
        return -1;
    }
    return 0;
}

static void *producer(void *arg)
{
    return produce_jobs(arg, send_one);
}

static void *worker(void *arg)
{
    struct tstate *ts = arg;
    const struct opts *o = ts->r->o;
    char recv[URL_MAX + 128], del[URL_MAX + 256], handle[160], t[32];
    int rn = snprintf(recv, sizeof recv,
                      "{\"QueueUrl\":\"%s\",\"MaxNumberOfMessages\":1,\"WaitTimeSeconds\":%d}",
                      queue_url, o->wait);
    while (!run_over(ts->r)) {
        struct http_resp resp;
        int st = sqs_post(&ts->c, "ReceiveMessage", recv, (size_t)rn, &resp);
        if (st != 200) {
            jq_report(ts, "sqs ReceiveMessage", st, &resp);
            continue;
        }
        if (!memmem(resp.body, resp.len, "\"Messages\"", 10))
            continue; /* none within the wait */
        if (member(resp.body, resp.len, "ReceiptHandle", handle, sizeof handle) != 0 ||
            member(resp.body, resp.len, "Body", t, sizeof t) != 0) {
            count_error(ts, "sqs ReceiveMessage: an answer without a handle or body: %.200s",
                        resp.body);
            continue;
        }
        int dn = snprintf(del, sizeof del, "{\"QueueUrl\":\"%s\",\"ReceiptHandle\":\"%s\"}",
                          queue_url, handle);
        st = sqs_post(&ts->c, "DeleteMessage", del, (size_t)dn, &resp);
        if (st != 200) {
            jq_report(ts, "sqs DeleteMessage", st, &resp);
            continue;
        }
        backlog_give(ts->r, 1);
        int64_t done = now_ns();
        count_op(ts, done, done - strtoll(t, NULL, 10));
    }
    return NULL;
}

static const struct driver lifecycle = {prepare, producer, worker, NULL};

const struct driver *sqs_driver(const char *scenario)
{
    return strcmp(scenario, "lifecycle") == 0 ? &lifecycle : NULL;
}
