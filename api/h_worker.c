/* Worker endpoints: POST /claim (with long poll), heartbeat, complete, fail, snooze.
 *
 * No thread waits: every store write runs with the connection suspended (pending.h), and a
 * long poll that found nothing parks (claim_poll.h): http.c calls router_dispatch() again
 * when it is woken, and handle_claim() finds its claim_state in rq->state and goes on. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "claim_poll.h"
#include "clock.h"
#include "handlers.h"
#include "jobjson.h"
#include "log.h"
#include "parse.h"
#include "pending.h"
#include "reply.h"

/* A claim across its calls: its body, parsed, and the poll (claim_poll.h). */
struct claim_state {
    struct claim_poll cp; /* first */
    cJSON *root;          /* the body: args' strings point into it */
    struct claim_args args;
};

static void claim_state_free(void *arg)
{
    struct claim_state *st = arg;
    if (!st)
        return;
    claim_poll_clear(&st->cp);
    claim_args_clear(&st->args);
    cJSON_Delete(st->root);
    free(st);
}

/* Answer the n jobs claimed (their strings are released, the array kept). */
static enum MHD_Result reply_claimed(struct request *rq, struct claim_poll *cp, size_t n)
{
    struct job *jobs = cp->jobs;
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

static enum MHD_Result reply_claim_failed(struct request *rq, enum store_result r)
{
    return reply_store_error(rq, r, "the claim");
}

static const struct claim_poll_answers claim_answers = {reply_claimed, reply_claim_failed};

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
    if (parse_claim(&f, &st->args) < 0) {
        fields_reply(rq, &f);
        claim_state_free(st);
        return NULL;
    }
    const struct claim_args *c = &st->args;
    struct claim_req req = {
        .worker_id = c->worker_id,
        .queues = c->queues,
        .nqueues = c->nqueues,
        .capabilities = c->capabilities,
        .lease_seconds = c->lease_seconds,
        .max_jobs = c->max_jobs,
    };
    if (claim_poll_init(&st->cp, rq, &req, c->wait_seconds * 1000, &claim_answers) != 0) {
        reply_error(rq, ERR_INTERNAL, "out of memory");
        claim_state_free(st);
        return NULL;
    }
    return st;
}

enum MHD_Result handle_claim(struct request *rq)
{
    struct claim_state *st = rq->state;
    if (st)
        return claim_poll_step(rq, &st->cp);
    if (!(st = claim_start_or_reply(rq)))
        return reply_result(rq);
    rq->state = st;
    rq->state_free = claim_state_free;
    return claim_poll_start(rq, &st->cp);
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
