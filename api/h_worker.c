/* Worker endpoints: POST /claim (with long poll), heartbeat, complete, fail, snooze.
 *
 * No thread waits: every store write runs with the connection suspended (pending.h), and a
 * long poll that found nothing parks. A claim arms a waiter before it looks (so an enqueue
 * in between is not missed); when the look finds nothing it parks the waiter, which
 * suspends the connection. The waiter's wake callback resumes the connection, and http.c
 * calls router_dispatch() again: handle_claim() sees its claim_state in rq->state and looks
 * again. */
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
#include "metrics.h"
#include "parse.h"
#include "pending.h"
#include "reply.h"

/* How many times a claim looks again after its waiter was signaled, before it parks. */
#define CLAIM_ROUNDS 4

/* A claim across its calls: parsed, its store call over, parked, woken. */
struct claim_state {
    struct pending p; /* the claim in flight */
    struct waiter w;
    struct waitq *q;
    struct MHD_Connection *conn;
    cJSON *root; /* the body: args' strings point into it */
    struct claim_args args;
    struct claim_req req;
    struct job *jobs;  /* req.max_jobs */
    int wait;          /* wait_seconds > 0 */
    int armed;         /* the waiter is armed for this look */
    int parked;        /* suspended in the waitq, not in a store call */
    int woken;         /* this look follows a wake-up from a park */
    int rounds;        /* looks since the last park */
    int64_t parked_us; /* clock_mono_us() when it first parked; 0: never parked */
};

static void claim_state_free(void *arg)
{
    struct claim_state *st = arg;
    if (!st)
        return;
    waitq_disarm(st->q, &st->w); /* after this the waitq never calls claim_wake() */
    if (st->jobs)
        job_array_free(st->jobs, (size_t)st->req.max_jobs);
    claim_args_clear(&st->args);
    cJSON_Delete(st->root);
    free(st);
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

/* Answer the n jobs claimed (their strings are released, the array kept). */
static enum MHD_Result reply_claimed(struct request *rq, struct job *jobs, size_t n)
{
    const struct claim_state *st = rq->state;
    metrics_claim_answered(st && st->parked_us ? clock_mono_us() - st->parked_us : 0, n > 0);
    struct jtext t = {0};
    jtext_jobs(&t, jobs, n, 1);
    if (t.oom)
        log_error("out of memory answering a claim: %zu claimed jobs are lost until their "
                  "leases expire",
                  n);
    for (size_t i = 0; i < n; i++)
        job_clear(&jobs[i]);
    return reply_jtext(rq, MHD_HTTP_OK, &t, NULL);
}

/* Look for jobs: arm the waiter first (so that an enqueue between the look and the park is
 * not missed), then submit the claim; handle_claim() goes on when it is over. */
static enum MHD_Result claim_look(struct request *rq, struct claim_state *st)
{
    st->armed = st->wait && waitq_arm(st->q, &st->w) == 0;
    st->p.call = (struct store_call){
        .kind = STORE_CALL_CLAIM, .now = clock_now(), .claim = {.req = &st->req, .out = st->jobs}};
    return pending_submit(rq, &st->p);
}

/* A claim woken to take a job cannot look: wake another waiter in its place. */
static void pass_wake_on(struct claim_state *st)
{
    for (size_t i = 0; i < st->args.nqueues; i++)
        waitq_notify_some(st->q, st->args.queues[i], 1);
}

/* The claim call is over: answer, or park when it found nothing and the wait is not over. */
static enum MHD_Result claim_looked(struct request *rq, struct claim_state *st)
{
    const struct store_call *call = &st->p.call;
    if (call->result != STORE_OK) {
        waitq_disarm(st->q, &st->w);
        if (st->woken)
            pass_wake_on(st);
        return reply_store_error(rq, call->result, "the claim");
    }
    st->woken = 0;
    if (call->claim.n > 0 || !st->armed || clock_mono_ms() >= st->w.deadline_ms) {
        waitq_disarm(st->q, &st->w);
        return reply_claimed(rq, st->jobs, call->claim.n);
    }
    /* 0: parked, the connection is suspended until claim_wake(); 1: signaled, look again. */
    st->parked = 1;
    if (!st->parked_us)
        st->parked_us = clock_mono_us();
    if (waitq_park(st->q, &st->w, claim_suspend, st) == 0)
        return MHD_YES;
    st->parked = 0;
    if (++st->rounds < CLAIM_ROUNDS)
        return claim_look(rq, st);
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

/* Parse a claim into a new state. Returns it, or NULL after answering. */
static struct claim_state *claim_start_or_reply(struct request *rq)
{
    struct fields f;
    cJSON *root;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0) {
        fields_reply(rq, &f);
        return NULL;
    }
    struct claim_state *st = calloc(1, sizeof *st);
    if (!st) {
        cJSON_Delete(root);
        reply_error(rq, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    st->root = root;
    st->q = rq->app->waitq;
    st->conn = rq->conn;
    if (parse_claim(&f, &st->args) < 0) {
        fields_reply(rq, &f);
        claim_state_free(st);
        return NULL;
    }
    const struct claim_args *c = &st->args;
    st->req = (struct claim_req){
        .worker_id = c->worker_id,
        .queues = c->queues,
        .nqueues = c->nqueues,
        .capabilities = c->capabilities,
        .lease_seconds = c->lease_seconds,
        .max_jobs = c->max_jobs,
    };
    st->jobs = calloc((size_t)c->max_jobs, sizeof *st->jobs);
    if (!st->jobs) {
        reply_error(rq, ERR_INTERNAL, "out of memory");
        claim_state_free(st);
        return NULL;
    }
    st->wait = c->wait_seconds > 0;
    st->w.queues = c->queues;
    st->w.nqueues = c->nqueues;
    st->w.deadline_ms = clock_mono_ms() + c->wait_seconds * 1000;
    st->w.wake = claim_wake;
    st->w.arg = st;
    return st;
}

enum MHD_Result handle_claim(struct request *rq)
{
    struct claim_state *st = rq->state;
    if (!st) {
        if (!(st = claim_start_or_reply(rq)))
            return reply_result(rq);
        rq->state = st;
        rq->state_free = claim_state_free;
        return claim_look(rq, st);
    }
    if (!st->parked)
        return claim_looked(rq, st);
    /* Woken from a park. */
    st->parked = 0;
    st->woken = 1;
    st->rounds = 0;
    if (client_gone(rq->conn)) {
        log_debug("parked claim: the client went away");
        pass_wake_on(st);
        return MHD_NO;
    }
    if (waitq_closing(rq->app->waitq))
        return reply_claimed(rq, NULL, 0); /* shutdown: parked polls answer empty */
    return claim_look(rq, st);
}

/* A heartbeat, complete, fail or snooze across its two calls. */
struct lease_state {
    struct pending p;
    cJSON *root; /* the body: a's strings point into it */
    struct lease_args a;
    struct job job;
};

static void lease_state_free(void *arg)
{
    struct lease_state *ls = arg;
    if (!ls)
        return;
    job_clear(&ls->job);
    lease_args_clear(&ls->a);
    cJSON_Delete(ls->root);
    free(ls);
}

/* Start a lease call of `kind` on job rq->id with its body read by `parse`, or answer it
 * once it is over. */
static enum MHD_Result lease_call(struct request *rq, enum store_call_kind kind,
                                  int (*parse)(struct fields *, struct lease_args *))
{
    struct lease_state *ls = rq->state;
    if (ls) {
        enum store_result r = ls->p.call.result;
        if (r == STORE_OK)
            return reply_job(rq, MHD_HTTP_OK, &ls->job);
        char what[40];
        snprintf(what, sizeof what, "job %" PRId64, rq->id);
        return reply_store_error(rq, r, what);
    }
    struct fields f;
    cJSON *root;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0)
        return fields_reply(rq, &f);
    ls = calloc(1, sizeof *ls);
    if (!ls) {
        cJSON_Delete(root);
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    }
    ls->root = root;
    if (parse(&f, &ls->a) < 0) {
        enum MHD_Result res = fields_reply(rq, &f);
        lease_state_free(ls);
        return res;
    }
    struct store_call *call = &ls->p.call;
    *call = (struct store_call){.kind = kind, .now = clock_now()};
    const char *token = ls->a.lease_token;
    if (kind == STORE_CALL_HEARTBEAT)
        call->heartbeat = (struct store_heartbeat_call){.id = rq->id,
                                                        .token = token,
                                                        .lease_seconds = ls->a.lease_seconds,
                                                        .progress = ls->a.json,
                                                        .out = &ls->job};
    else if (kind == STORE_CALL_COMPLETE)
        call->complete = (struct store_complete_call){
            .id = rq->id, .token = token, .result = ls->a.json, .out = &ls->job};
    else if (kind == STORE_CALL_SNOOZE)
        call->snooze = (struct store_snooze_call){.id = rq->id,
                                                  .token = token,
                                                  .seconds = ls->a.seconds,
                                                  .pause_key = ls->a.pause_key,
                                                  .out = &ls->job};
    else
        call->fail = (struct store_fail_call){
            .id = rq->id, .token = token, .req = &ls->a.fail, .out = &ls->job};
    rq->state = ls;
    rq->state_free = lease_state_free;
    return pending_submit(rq, &ls->p);
}

enum MHD_Result handle_heartbeat(struct request *rq)
{
    return lease_call(rq, STORE_CALL_HEARTBEAT, parse_heartbeat);
}

enum MHD_Result handle_complete(struct request *rq)
{
    return lease_call(rq, STORE_CALL_COMPLETE, parse_complete);
}

enum MHD_Result handle_fail(struct request *rq)
{
    return lease_call(rq, STORE_CALL_FAIL, parse_fail);
}

enum MHD_Result handle_snooze(struct request *rq)
{
    return lease_call(rq, STORE_CALL_SNOOZE, parse_snooze);
}
