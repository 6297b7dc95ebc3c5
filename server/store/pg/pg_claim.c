/* store_claim for PostgreSQL: one statement picks the best due jobs of every requested queue
 * with FOR UPDATE SKIP LOCKED (claimers on any process never wait on each other's rows and
 * never take the same job) and takes them, each with a fresh random lease token. When a lane
 * of the queues may hold a job for the claimer the statement takes nothing and the lanes'
 * way follows (pg_lanes.c): inside the group's transaction when the claim expected it (its
 * queues' last claim here went that way: the lane hints), so that a keyed claim commits with
 * the plain ones; else after their commit, in a transaction of its own. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_lanes.h"
#include "pg_row.h"
#include "pg_store.h"
#include "rand.h"

/* The hint slot of queue q and the value that says "lanes" there (never 0). */
static size_t hint_of(const char *q, uint64_t *v)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)q; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    *v = h | 1;
    return (size_t)(h >> 32) % PG_LANE_HINTS;
}

/* 1 when the last claim here of one of pc's queues found a lane that may hold a job. */
static int lanes_hinted(const struct pg_call *pc)
{
    for (size_t i = 0; i < pc->nqueues; i++) {
        uint64_t v;
        size_t slot = hint_of(pc->call->claim.req->queues[i], &v);
        if (atomic_load(&pc->st->lane_hints[slot]) == v)
            return 1;
    }
    return 0;
}

/* Remember whether a claim of pc's queues may go through the lanes next time. */
static void lanes_hint(const struct pg_call *pc, int lanes)
{
    for (size_t i = 0; i < pc->nqueues; i++) {
        uint64_t v;
        size_t slot = hint_of(pc->call->claim.req->queues[i], &v);
        uint_fast64_t was = v;
        if (lanes)
            atomic_store(&pc->st->lane_hints[slot], v);
        else
            atomic_compare_exchange_strong(&pc->st->lane_hints[slot], &was, 0);
    }
}

static int claim_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    const struct claim_req *req = calls[0].call->claim.req;
    *b = (struct pg_bind){.id = PG_CLAIM, .what = "claim", .n = 7};
    struct pg_arr tokens = {0}, leases = {0}, workers = {0};
    int64_t total = 0;
    for (size_t i = 0; i < k; i++) {
        const struct claim_req *r = calls[i].call->claim.req;
        for (int j = 0; j < calls[i].max_jobs; j++) {
            char tok[JOB_TOKEN_LEN + 1];
            if (rand_token(tok) != 0)
                tokens.bad = 1;
            pg_arr_text(&tokens, tok);
            pg_arr_int(&leases, r->lease_seconds);
            pg_arr_text(&workers, r->worker_id);
        }
        total += calls[i].max_jobs;
    }
    int rc = pg_arr_bind(&tokens, b, 4) | pg_arr_bind(&leases, b, 5) | pg_arr_bind(&workers, b, 6);
    if (calls[0].nqueues == 1) {
        b->id = PG_CLAIM_ONE_QUEUE;
        b->params[0] = req->queues[0];
    } else {
        struct pg_arr queues = {0};
        for (size_t i = 0; i < calls[0].nqueues; i++)
            pg_arr_text(&queues, req->queues[i]);
        rc |= pg_arr_bind(&queues, b, 0);
    }
    if (rc != 0) {
        pg_bind_free(b);
        return -1;
    }
    b->params[1] = pg_int_param(b->ints[1], pg_calls_now(calls, k));
    b->params[2] = req->capabilities;
    b->params[3] = pg_int_param(b->ints[3], total);
    return 0;
}

/* The n-th best job (its place in the pick, the last column) goes to the call whose share of the claim holds n:
 * the first call's max_jobs first, and so on, each call's jobs in claim order. */
static void claim_recv(struct pg_call *calls, size_t k, const PGresult *res,
                       struct store_news *notes)
{
    (void)notes;
    int64_t total = 0;
    for (size_t i = 0; i < k; i++) {
        calls[i].call->claim.n = 0;
        calls[i].call->result = STORE_OK;
        calls[i].follow = 0;
        total += calls[i].max_jobs;
    }
    int *at = malloc((size_t)total * sizeof *at); /* at[n - 1]: the row of rn n, or -1 */
    if (!at) {
        log_error("out of memory reading claimed jobs");
        for (size_t i = 0; i < k; i++)
            calls[i].call->result = STORE_ERROR;
        return;
    }
    for (int64_t n = 0; n < total; n++)
        at[n] = -1;
    /* The columns of a job, its place (rn), and whether a lane may hold more (lanes): a row
     * with no place only carries the last. */
    int rows = PQntuples(res), lanes_col = PQnfields(res) - 1, rn_col = lanes_col - 1;
    int lanes = rows > 0 && strcmp(PQgetvalue(res, 0, lanes_col), "t") == 0;
    for (int row = 0; row < rows; row++) {
        if (PQgetisnull(res, row, rn_col))
            continue;
        int64_t rn = pg_row_int(res, row, rn_col);
        if (rn >= 1 && rn <= total)
            at[rn - 1] = row;
    }
    size_t i = 0;
    int64_t end = calls[0].max_jobs;
    for (int64_t n = 0; n < total; n++) {
        while (n >= end)
            end += calls[++i].max_jobs;
        struct store_call *call = calls[i].call;
        if (at[n] < 0)
            continue;
        if (pg_row_job(res, at[n], 1, &call->claim.out[call->claim.n]) != 0)
            call->result = STORE_ERROR;
        else
            call->claim.n++;
    }
    free(at);
    /* The statement takes nothing while a queue has a lane open for the claimer: the lanes'
     * way decides. A claim that took nothing where no lane may hold a job is done: there was
     * none, and no second statement is sent to find that out. */
    for (size_t c = 0; c < k; c++)
        calls[c].follow = lanes && calls[c].call->result == STORE_OK && calls[c].call->claim.n == 0;
    lanes_hint(&calls[0], lanes); /* the calls of one statement claim the same queues */
}

static int same_text(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

/* Claims of the same queues with the same capabilities share one statement. */
static int claim_same(const struct pg_call *a, const struct pg_call *b)
{
    const struct claim_req *x = a->call->claim.req, *y = b->call->claim.req;
    if (a->nqueues != b->nqueues || !same_text(x->capabilities, y->capabilities))
        return 0;
    for (size_t i = 0; i < a->nqueues; i++) {
        if (strcmp(x->queues[i], y->queues[i]) != 0)
            return 0;
    }
    return 1;
}

/* The plain statement took nothing: the lanes' way, in the transaction c is in (else in one
 * of its own that publishes its news). */
static enum store_result claim_follow(struct pg_conn *c, struct pg_call *pc,
                                      struct store_news *notes)
{
    int more = 0;
    enum store_result r = pg_lanes_claim(c, pc, notes, &more);
    if (r == STORE_OK)
        lanes_hint(pc, more);
    return r;
}

static const struct pg_one claim_one = {claim_bind, claim_recv, claim_follow, claim_same, 1};

/* A claim that expects the lanes sends their candidates' statement in its pipeline instead of
 * the plain one (which would take nothing): the lanes' way then starts from them. */
static int lanes_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    (void)k; /* 1: no `same` */
    return pg_lanes_bind(&calls[0], b);
}

static void lanes_recv(struct pg_call *calls, size_t k, const PGresult *res,
                       struct store_news *notes)
{
    (void)k;
    (void)notes;
    calls[0].call->claim.n = 0;
    calls[0].call->result = pg_lanes_keep(&calls[0], res);
    calls[0].follow = calls[0].call->result == STORE_OK;
}

static const struct pg_one claim_lanes_one = {lanes_bind, lanes_recv, claim_follow, NULL, 1};

static void claim_discard(void *p)
{
    struct pg_call *a = p;
    for (size_t i = 0; i < a->call->claim.n; i++)
        job_clear(&a->call->claim.out[i]);
    a->call->claim.n = 0;
    pg_lanes_drop(a);
}

int pg_claim_prepare(struct pg_call *pc)
{
    const struct claim_req *req = pc->call->claim.req;
    pc->call->claim.n = 0;
    if (req->nqueues == 0 || req->max_jobs < 1) {
        pc->call->result = STORE_OK;
        return 0;
    }
    pc->max_jobs = req->max_jobs > JOB_CLAIM_MAX ? JOB_CLAIM_MAX : req->max_jobs;
    pc->nqueues = req->nqueues > JOB_QUEUES_MAX ? JOB_QUEUES_MAX : req->nqueues;
    pc->tx = (struct pg_tx){.name = "claim", .fn = pg_one_tx, .discard = claim_discard};
    pc->in_tx = lanes_hinted(pc);
    pc->one = pc->in_tx ? &claim_lanes_one : &claim_one;
    return 1;
}
