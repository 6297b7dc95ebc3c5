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

static enum store_result claim_tx(struct pg_conn *c, void *p, struct pg_notes *notes)
{
    (void)notes;
    struct pg_call *a = p;
    struct store_call *call = a->call;
    const struct claim_req *req = call->claim;
    call->n = 0;
    char queues[JOB_QUEUES_MAX * (JOB_QUEUE_MAX + 4) + 8];
    char tokens[JOB_CLAIM_MAX * (JOB_TOKEN_LEN + 4) + 8];
    char toks[JOB_CLAIM_MAX][JOB_TOKEN_LEN + 1];
    const char *tokp[JOB_CLAIM_MAX];
    for (int i = 0; i < a->max_jobs; i++) {
        if (rand_token(toks[i]) != 0)
            return STORE_ERROR;
        tokp[i] = toks[i];
    }
    if (pg_text_array(queues, sizeof queues, req->queues, a->nqueues) != 0 ||
        pg_text_array(tokens, sizeof tokens, tokp, (size_t)a->max_jobs) != 0) {
        log_error("claim: parameters too long");
        return STORE_ERROR;
    }
    char now[24], max[24], lease[24];
    const char *params[7] = {queues,
                             pg_int_param(now, a->now),
                             req->capabilities,
                             pg_int_param(max, a->max_jobs),
                             tokens,
                             pg_int_param(lease, req->lease_seconds),
                             req->worker_id};
    enum store_result r;
    PGresult *res = pg_exec(c, PG_CLAIM, 7, params, "claim", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    for (int i = 0; i < rows && i < a->max_jobs; i++) {
        if (pg_row_job(res, i, 1, &call->out[call->n]) != 0) {
            r = STORE_ERROR;
            break;
        }
        call->n++;
    }
    PQclear(res);
    if (r == STORE_OK)
        qsort(call->out, call->n, sizeof call->out[0], job_cmp);
    return r;
}

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
    pc->tx = (struct pg_tx){.name = "claim", .fn = claim_tx, .discard = claim_discard};
    return 1;
}
