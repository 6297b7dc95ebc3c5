/* Worker endpoints: POST /claim (with long poll), heartbeat, complete, fail.
 *
 * A long poll never holds a thread: a claim that finds nothing arms a waiter (before it
 * looks, so an enqueue in between is not missed), then parks it, which suspends the
 * connection. The waiter's wake callback resumes the connection, and http.c calls
 * router_dispatch() again: handle_claim() sees its claim_state in rq->state and looks again. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "app.h"
#include "clock.h"
#include "handlers.h"
#include "jobjson.h"
#include "log.h"
#include "parse.h"
#include "reply.h"

/* How many times one dispatch looks again after a waiter was signaled before it parks. */
#define CLAIM_ROUNDS 4

/* A claim that may wait, kept across dispatches of one request. */
struct claim_state {
    struct waiter w;
    struct waitq *q;
    struct MHD_Connection *conn;
    char *worker_id;
    char *queues[JOB_QUEUES_MAX];
    size_t nqueues;
    char *capabilities;
    int64_t lease_seconds;
    int max_jobs;
};

static void claim_state_free(void *arg)
{
    struct claim_state *st = arg;
    if (!st)
        return;
    waitq_disarm(st->q, &st->w); /* after this the waitq never calls claim_wake() */
    free(st->worker_id);
    for (size_t i = 0; i < st->nqueues; i++)
        free(st->queues[i]);
    free(st->capabilities);
    free(st);
}

static struct claim_state *claim_state_new(struct request *rq, const struct claim_args *c,
                                           int64_t deadline_ms)
{
    struct claim_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->q = rq->app->waitq;
    st->conn = rq->conn;
    st->worker_id = strdup(c->worker_id);
    st->capabilities = c->capabilities ? strdup(c->capabilities) : NULL;
    st->lease_seconds = c->lease_seconds;
    st->max_jobs = c->max_jobs;
    int ok = st->worker_id && (!c->capabilities || st->capabilities);
    for (size_t i = 0; i < c->nqueues; i++) {
        st->queues[i] = strdup(c->queues[i]);
        st->nqueues = i + 1;
        ok = ok && st->queues[i];
    }
    if (!ok) {
        claim_state_free(st);
        return NULL;
    }
    st->w.queues = (const char *const *)st->queues;
    st->w.nqueues = st->nqueues;
    st->w.deadline_ms = deadline_ms;
    st->w.arg = st;
    return st;
}

/* Called by waitq_park() with the waitq lock held. */
static void claim_suspend(void *arg)
{
    struct claim_state *st = arg;
    MHD_suspend_connection(st->conn);
}

/* Called once by the waitq (lock held) when the parked claim should look again. */
static void claim_wake(void *arg)
{
    struct claim_state *st = arg;
    MHD_resume_connection(st->conn);
}

static enum MHD_Result reply_claimed(struct request *rq, struct job *jobs, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "jobs");
    if (!arr) {
        cJSON_Delete(root);
        root = NULL;
    }
    for (size_t i = 0; root && i < n; i++) {
        cJSON *j = job_to_json(&jobs[i], 1);
        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root)
        log_error("out of memory answering a claim: %zu claimed jobs are lost until their "
                  "leases expire",
                  n);
    job_array_free(jobs, n);
    return reply_json(rq, MHD_HTTP_OK, root);
}

/* Claim once. Returns 0 with the jobs in *jobs (*n may be 0), or -1 after answering. */
static int claim_once_or_reply(struct request *rq, const struct claim_req *req, int64_t now,
                               struct job **jobs, size_t *n)
{
    *jobs = calloc((size_t)req->max_jobs, sizeof **jobs);
    *n = 0;
    if (!*jobs) {
        reply_error(rq, ERR_INTERNAL, "out of memory");
        return -1;
    }
    enum store_result r = store_claim(rq->app->store, req, now, *jobs, n);
    if (r != STORE_OK) {
        free(*jobs);
        *jobs = NULL;
        reply_store_error(rq, r, "the claim");
        return -1;
    }
    return 0;
}

/* Look for jobs, and park when there are none and the wait is not over. */
static enum MHD_Result claim_wait(struct request *rq, struct claim_state *st, int64_t now)
{
    struct claim_req req = {
        .worker_id = st->worker_id,
        .queues = (const char *const *)st->queues,
        .nqueues = st->nqueues,
        .capabilities = st->capabilities,
        .lease_seconds = st->lease_seconds,
        .max_jobs = st->max_jobs,
    };
    st->w.wake = claim_wake;
    for (int round = 0; round < CLAIM_ROUNDS; round++) {
        int armed = waitq_arm(st->q, &st->w) == 0;
        struct job *jobs;
        size_t n;
        int failed = claim_once_or_reply(rq, &req, now, &jobs, &n) < 0;
        if (failed || n > 0 || !armed || clock_mono_ms() >= st->w.deadline_ms) {
            if (armed)
                waitq_disarm(st->q, &st->w);
            return failed ? reply_result(rq) : reply_claimed(rq, jobs, n);
        }
        free(jobs);
        /* 0: parked, the connection is suspended until claim_wake(); 1: look again. */
        if (waitq_park(st->q, &st->w, claim_suspend, st) == 0)
            return MHD_YES;
    }
    /* Signaled every round but others took the jobs: answer empty, the worker polls again. */
    return reply_claimed(rq, NULL, 0);
}

/* 1 when the client closed its connection while the claim was parked. Claiming for it would
 * hide jobs until their leases expire, so a resumed claim checks first. A client that sent
 * more bytes (a pipelined request) is still there. */
static int client_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return 0;
    char byte;
    ssize_t r = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

enum MHD_Result handle_claim(struct request *rq)
{
    int64_t now = clock_now();
    if (rq->state) {
        /* Resumed after a park. */
        if (client_gone(rq->conn)) {
            log_debug("parked claim: the client went away");
            return MHD_NO;
        }
        if (waitq_closing(rq->app->waitq))
            return reply_claimed(rq, NULL, 0); /* shutdown: parked polls answer empty */
        return claim_wait(rq, rq->state, now);
    }

    struct fields f;
    cJSON *root;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0)
        return fields_reply(rq, &f);
    enum MHD_Result res;
    struct claim_args c;
    if (parse_claim(&f, &c) < 0) {
        res = fields_reply(rq, &f);
    } else if (c.wait_seconds == 0) {
        struct claim_req req = {
            .worker_id = c.worker_id,
            .queues = c.queues,
            .nqueues = c.nqueues,
            .capabilities = c.capabilities,
            .lease_seconds = c.lease_seconds,
            .max_jobs = c.max_jobs,
        };
        struct job *jobs;
        size_t n;
        if (claim_once_or_reply(rq, &req, now, &jobs, &n) < 0)
            res = reply_result(rq);
        else
            res = reply_claimed(rq, jobs, n);
    } else {
        struct claim_state *st = claim_state_new(rq, &c, clock_mono_ms() + c.wait_seconds * 1000);
        if (!st) {
            res = reply_error(rq, ERR_INTERNAL, "out of memory");
        } else {
            rq->state = st;
            rq->state_free = claim_state_free;
            res = claim_wait(rq, st, now);
        }
    }
    claim_args_clear(&c);
    cJSON_Delete(root);
    return res;
}

/* The body of a lease call, read with `parse`. Returns 0, or -1 after answering. */
static int lease_body_or_reply(struct request *rq, cJSON **root, struct lease_args *a,
                               int (*parse)(struct fields *, struct lease_args *))
{
    struct fields f;
    memset(a, 0, sizeof *a);
    if (fields_parse_body(&f, root, rq->body, rq->body_len) < 0) {
        fields_reply(rq, &f);
        return -1;
    }
    if (parse(&f, a) < 0) {
        fields_reply(rq, &f);
        lease_args_clear(a);
        cJSON_Delete(*root);
        *root = NULL;
        return -1;
    }
    return 0;
}

/* Answer the result of a lease call on job rq->id; releases a and root. */
static enum MHD_Result lease_reply(struct request *rq, enum store_result r, struct job *job,
                                   cJSON *root, struct lease_args *a)
{
    enum MHD_Result res;
    if (r == STORE_OK) {
        res = reply_job(rq, MHD_HTTP_OK, job);
    } else {
        char what[40];
        snprintf(what, sizeof what, "job %" PRId64, rq->id);
        res = reply_store_error(rq, r, what);
    }
    lease_args_clear(a);
    cJSON_Delete(root);
    return res;
}

enum MHD_Result handle_heartbeat(struct request *rq)
{
    int64_t now = clock_now();
    cJSON *root;
    struct lease_args a;
    if (lease_body_or_reply(rq, &root, &a, parse_heartbeat) < 0)
        return reply_result(rq);
    struct job job = {0};
    enum store_result r =
        store_heartbeat(rq->app->store, rq->id, a.lease_token, a.lease_seconds, a.json, now, &job);
    return lease_reply(rq, r, &job, root, &a);
}

enum MHD_Result handle_complete(struct request *rq)
{
    int64_t now = clock_now();
    cJSON *root;
    struct lease_args a;
    if (lease_body_or_reply(rq, &root, &a, parse_complete) < 0)
        return reply_result(rq);
    struct job job = {0};
    enum store_result r = store_complete(rq->app->store, rq->id, a.lease_token, a.json, now, &job);
    return lease_reply(rq, r, &job, root, &a);
}

enum MHD_Result handle_fail(struct request *rq)
{
    int64_t now = clock_now();
    cJSON *root;
    struct lease_args a;
    if (lease_body_or_reply(rq, &root, &a, parse_fail) < 0)
        return reply_result(rq);
    struct job job = {0};
    enum store_result r = store_fail(rq->app->store, rq->id, a.lease_token, &a.fail, now, &job);
    return lease_reply(rq, r, &job, root, &a);
}
