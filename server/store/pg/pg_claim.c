/* store_claim for PostgreSQL: one statement picks the best due jobs of every requested queue
 * with FOR UPDATE SKIP LOCKED (claimers on any process never wait on each other's rows and
 * never take the same job) and takes them, each with a fresh random lease token. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"
#include "rand.h"

/* Claim order: priority desc, run_at asc, id asc. */
static int job_cmp(const void *pa, const void *pb)
{
    const struct job *a = pa, *b = pb;
    return job_claim_order(a->priority, a->run_at, a->id, b->priority, b->run_at, b->id);
}

static int claim_bind(struct pg_call *a, struct pg_bind *b)
{
    const struct claim_req *req = a->call->claim;
    *b = (struct pg_bind){.id = PG_CLAIM, .what = "claim", .n = 7};
    char toks[JOB_CLAIM_MAX][JOB_TOKEN_LEN + 1];
    const char *tokp[JOB_CLAIM_MAX];
    for (int i = 0; i < a->max_jobs; i++) {
        if (rand_token(toks[i]) != 0)
            return -1;
        tokp[i] = toks[i];
    }
    if (pg_text_array(b->text[0], sizeof b->text[0], req->queues, a->nqueues) != 0 ||
        pg_text_array(b->text[1], sizeof b->text[1], tokp, (size_t)a->max_jobs) != 0) {
        log_error("claim: parameters too long");
        return -1;
    }
    b->params[0] = b->text[0];
    b->params[1] = pg_int_param(b->ints[1], a->now);
    b->params[2] = req->capabilities;
    b->params[3] = pg_int_param(b->ints[3], a->max_jobs);
    b->params[4] = b->text[1];
    b->params[5] = pg_int_param(b->ints[5], req->lease_seconds);
    b->params[6] = req->worker_id;
    return 0;
}

static enum store_result claim_recv(struct pg_call *a, const PGresult *res, struct pg_notes *notes)
{
    (void)notes;
    struct store_call *call = a->call;
    call->n = 0;
    int rows = PQntuples(res);
    for (int i = 0; i < rows && i < a->max_jobs; i++) {
        if (pg_row_job(res, i, 1, &call->out[call->n]) != 0)
            return STORE_ERROR;
        call->n++;
    }
    qsort(call->out, call->n, sizeof call->out[0], job_cmp);
    return STORE_OK;
}

static const struct pg_one claim_one = {claim_bind, claim_recv, NULL};

static void claim_discard(void *p)
{
    struct pg_call *a = p;
    for (size_t i = 0; i < a->call->n; i++)
        job_clear(&a->call->out[i]);
    a->call->n = 0;
}

int pg_claim_prepare(struct pg_call *pc)
{
    const struct claim_req *req = pc->call->claim;
    pc->call->n = 0;
    if (req->nqueues == 0 || req->max_jobs < 1) {
        pc->call->result = STORE_OK;
        return 0;
    }
    pc->max_jobs = req->max_jobs > JOB_CLAIM_MAX ? JOB_CLAIM_MAX : req->max_jobs;
    pc->nqueues = req->nqueues > JOB_QUEUES_MAX ? JOB_QUEUES_MAX : req->nqueues;
    pc->tx = (struct pg_tx){.name = "claim", .fn = pg_one_tx, .discard = claim_discard};
    pc->one = &claim_one;
    return 1;
}
