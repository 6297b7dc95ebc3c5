/* The claim by the lanes on PostgreSQL (pg_lanes.h, docs/flow-control.md): the candidates
 * (read without a transaction: a queue without open lanes costs this one statement; or read
 * ahead in the claim's group pipeline, pg_lanes_keep), then in one transaction (the group's,
 * when the claim runs inside one) lane_claim_run takes the jobs, each key tried-locked and
 * read when the claim first reaches one of its lanes, in claim order. Round trips are few: the
 * BEGIN goes with the first statements, a key's lock and the read of its state go together
 * (pipelined: the read still runs after the lock), and the take of a lane's head brings its
 * next head. */
#include "pg_lanes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lane_claim.h"
#include "log.h"
#include "pg_row.h"
#include "pg_store.h"
#include "rand.h"

#define LANES_EXTRA 8 /* lanes read per queue past max_jobs (closed keys passed by) */

struct lanes_be {
    struct pg_conn *c;
    int64_t now;
    const struct claim_req *req;
    struct store_news news;
    int64_t statement_ms;
    int begun; /* the claim's transaction has begun (its BEGIN goes with its first statements) */
    /* The next head of lane next_lane, learnt by the take just before (PG_CLAIM_TAKE_NEXT);
     * next_lane 0: none. */
    int64_t next_lane;
    struct lane_cand next;
};

static const char *int_param(char buf[24], int64_t v)
{
    return pg_int_param(buf, v);
}

/* One statement of a round trip. */
struct lanes_stmt {
    enum pg_stmt_id id;
    int n;
    const char *const *params;
};

/* Read the result of one statement of a pipeline (the result, then the NULL that ends it)
 * into *out, unless an earlier one failed (*r not STORE_OK). 0, or -1 when no answer came
 * by deadline. */
static int pipe_result(struct pg_conn *c, int64_t deadline, const char *what, enum store_result *r,
                       PGresult **out)
{
    if (pg_await(c, deadline) != 0)
        return -1;
    PGresult *res = PQgetResult(c->db);
    if (*r == STORE_OK && !pg_result_ok(res))
        *r = pg_fail(c, res, what);
    else if (*r == STORE_OK && out)
        *out = res, res = NULL;
    PQclear(res);
    if (pg_await(c, deadline) != 0)
        return -1;
    PQclear(PQgetResult(c->db));
    return 0;
}

/* Run st[0..n) on b's connection in one round trip, BEGIN before them when the claim's
 * transaction has not begun (pipeline mode: each runs after the one before, with a snapshot
 * of its own under READ COMMITTED, as if sent one by one). out[i] is st[i]'s result (the
 * caller clears it). Returns STORE_OK, or the first failure (out[] all NULL; the
 * transaction, once begun, is then rolled back by the caller). */
static enum store_result lanes_run(struct lanes_be *b, const struct lanes_stmt *st, int n,
                                   const char *what, PGresult **out)
{
    struct pg_conn *c = b->c;
    enum store_result r = STORE_OK;
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
        if (r == STORE_OK)
            r = pg_prepare(c, st[i].id, what); /* outside the pipeline (pg_pipe.c says why) */
    }
    if (r != STORE_OK)
        return r;
    if (b->begun && n == 1) {
        out[0] = pg_conn_exec(c, st[0].id, st[0].n, st[0].params, what, &r);
        return r;
    }
    int sent = PQenterPipelineMode(c->db);
    if (sent && !b->begun)
        sent = PQsendQueryParams(c->db, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
    for (int i = 0; sent && i < n; i++)
        sent = pg_send(c, st[i].id, st[i].n, st[i].params) == 0;
    if (!sent || !PQpipelineSync(c->db)) {
        c->bad = 1;
        return pg_fail(c, NULL, what);
    }
    pg_conn_trip(c);
    int64_t deadline = clock_mono_ms() + b->statement_ms;
    int lost = 0;
    if (!b->begun) {
        lost = pipe_result(c, deadline, what, &r, NULL);
        b->begun = r == STORE_OK && !lost;
    }
    for (int i = 0; i < n && !lost; i++)
        lost = pipe_result(c, deadline, what, &r, &out[i]);
    PGresult *sync = NULL;
    if (!lost && pg_await(c, deadline) == 0)
        sync = PQgetResult(c->db);
    if (!sync || PQresultStatus(sync) != PGRES_PIPELINE_SYNC || !PQexitPipelineMode(c->db)) {
        pg_cancel(c);
        c->bad = 1; /* no answer in time, or out of step: the connection is dropped */
        if (r == STORE_OK)
            r = pg_fail(c, NULL, what);
    }
    PQclear(sync);
    if (r != STORE_OK) {
        for (int i = 0; i < n; i++) {
            PQclear(out[i]);
            out[i] = NULL;
        }
    }
    return r;
}

/* lanes_run of one statement: its result, or NULL with *r set. */
static PGresult *run(struct lanes_be *b, enum pg_stmt_id id, int n, const char *const *p,
                     const char *what, enum store_result *r)
{
    struct lanes_stmt st = {id, n, p};
    PGresult *res = NULL;
    *r = lanes_run(b, &st, 1, what, &res);
    return res;
}

/* A plain job is taken by itself; the head of a lane with the lane's next head (kept for
 * be_head, which follows). */
static enum store_result be_take(void *p, const struct lane_cand *cand, struct job *out)
{
    struct lanes_be *b = p;
    char tok[JOB_TOKEN_LEN + 1], ids[24], now[24], lease[24], lane[24];
    if (rand_token(tok) != 0)
        return STORE_ERROR;
    const char *params[6] = {int_param(ids, cand->id),
                             int_param(now, b->now),
                             tok,
                             int_param(lease, b->req->lease_seconds),
                             b->req->worker_id,
                             int_param(lane, cand->lane)};
    enum pg_stmt_id id = cand->lane ? PG_CLAIM_TAKE_NEXT : PG_CLAIM_TAKE_ID;
    enum store_result r;
    PGresult *res = run(b, id, cand->lane ? 6 : 5, params, "claim (lanes): take", &r);
    if (!res)
        return r;
    b->next_lane = 0;
    int nf = PQnfields(res);
    if (cand->lane && PQntuples(res) == 1) {
        b->next_lane = cand->lane;
        b->next.id = PQgetisnull(res, 0, nf - 3) ? 0 : pg_row_int(res, 0, nf - 3);
        b->next.priority = pg_row_int(res, 0, nf - 2);
        b->next.run_at = pg_row_int(res, 0, nf - 1);
    }
    r = PQntuples(res) == 0 || PQgetisnull(res, 0, 0) ? STORE_NOT_FOUND
        : pg_row_job(res, 0, 1, out) == 0             ? STORE_OK
                                                      : STORE_ERROR;
    PQclear(res);
    return r;
}

static enum store_result be_head(void *p, struct lane_cand *cand)
{
    struct lanes_be *b = p;
    if (b->next_lane == cand->lane) { /* the take just before found it */
        b->next_lane = 0;
        cand->id = b->next.id;
        cand->priority = b->next.priority;
        cand->run_at = b->next.run_at;
        return STORE_OK;
    }
    char lane[24], now[24];
    const char *params[2] = {int_param(lane, cand->lane), int_param(now, b->now)};
    enum store_result r;
    PGresult *res = run(b, PG_LANE_HEAD, 2, params, "claim (lanes): head", &r);
    if (!res)
        return r;
    cand->id = 0;
    if (PQntuples(res) == 1) {
        cand->id = pg_row_int(res, 0, 0);
        cand->priority = pg_row_int(res, 0, 1);
        cand->run_at = pg_row_int(res, 0, 2);
    }
    PQclear(res);
    return STORE_OK;
}

static enum store_result key_read(struct lanes_be *b, struct lane_key *k, PGresult *res);

/* The key's lock, tried (another claimer holds it: STORE_BUSY, passed by), and its state read
 * by the statement after it, in one round trip, when the claim first reaches a lane of the
 * key. */
static enum store_result be_key_load(void *p, struct lane_key *k)
{
    struct lanes_be *b = p;
    struct pg_arr arr = {0};
    pg_arr_text(&arr, k->key);
    char *lit = pg_arr_take(&arr), *limits = lane_limit_keys_json(k->key), now[24];
    if (!lit || !limits) {
        log_error("out of memory for the limit keys of a concurrency key");
        free(lit);
        free(limits);
        return STORE_ERROR;
    }
    const char *lock[1] = {lit};
    const char *state[3] = {k->key, limits, int_param(now, b->now)};
    struct lanes_stmt st[2] = {{PG_KEYS_LOCK, 1, lock}, {PG_KEY_STATE, 3, state}};
    PGresult *res[2];
    enum store_result r = lanes_run(b, st, 2, "claim (lanes): key", res);
    free(lit);
    free(limits);
    if (r != STORE_OK)
        return r;
    int locked = PQntuples(res[0]) == 1;
    r = locked ? key_read(b, k, res[1]) : STORE_BUSY;
    PQclear(res[0]);
    PQclear(res[1]);
    return r;
}

static enum store_result be_key_claimed(void *p, struct lane_key *k)
{
    struct lanes_be *b = p;
    if (!k->has_limit || k->limit.rate_jobs <= 0)
        return STORE_OK;
    char now[24], from[24];
    const char *params[3] = {k->key, int_param(now, k->now),
                             int_param(from, limit_window_start(&k->limit, k->now))};
    enum store_result r;
    PGresult *res = run(b, PG_KEY_CLAIMED, 3, params, "claim (lanes): key claimed", &r);
    PQclear(res);
    return res ? STORE_OK : r;
}

static enum store_result be_key_window(void *p, const struct lane_key *k, int64_t from,
                                       struct limit_claims *rows, size_t cap, size_t *n)
{
    struct lanes_be *b = p;
    char since[24];
    const char *params[2] = {k->key, int_param(since, from)};
    enum store_result r;
    PGresult *res = run(b, PG_KEY_WINDOW_ROWS, 2, params, "claim (lanes): window rows", &r);
    if (!res)
        return r;
    *n = 0;
    for (int i = 0; i < PQntuples(res) && *n < cap; i++)
        rows[(*n)++] = (struct limit_claims){pg_row_int(res, i, 0), pg_row_int(res, i, 1)};
    PQclear(res);
    return STORE_OK;
}

static enum store_result be_key_close(void *p, const struct lane_key *k, int64_t at)
{
    struct lanes_be *b = p;
    enum store_result r;
    char when[24];
    const char *params[2] = {k->key, int_param(when, at)};
    PGresult *res = run(b, PG_KEY_CLOSE, 2, params, "claim (lanes): key close", &r);
    if (!res)
        return r;
    for (int i = 0; i < PQntuples(res) && at != LIMIT_NEVER; i++)
        store_news_later(&b->news, PQgetvalue(res, i, 0), at);
    PQclear(res);
    return STORE_OK;
}

static const struct lane_claim_ops pg_lane_ops = {be_take,        be_head,       be_key_load,
                                                  be_key_claimed, be_key_window, be_key_close};

/* The claims of rate-limited key k count in its newest second when that is after the claim's
 * now (limit_claim_second): its window is counted again at that second. */
static enum store_result key_moved(struct lanes_be *b, struct lane_key *k, int64_t newest)
{
    int64_t at = limit_claim_second(k->now, newest);
    if (at == k->now)
        return STORE_OK;
    k->now = at;
    char from[24];
    const char *params[2] = {k->key, int_param(from, limit_window_start(&k->limit, at))};
    enum store_result r;
    PGresult *res = run(b, PG_KEY_WINDOW, 2, params, "claim (lanes): window", &r);
    if (!res)
        return r;
    k->window = pg_row_int(res, 0, 0);
    PQclear(res);
    return STORE_OK;
}

/* The state of key k from PG_KEY_STATE's rows (read after its lock). */
static enum store_result key_read(struct lanes_be *b, struct lane_key *k, PGresult *res)
{
    int n = PQntuples(res);
    struct limit *found = calloc((size_t)n + 1, sizeof *found);
    int64_t *windows = calloc((size_t)n + 1, sizeof *windows);
    size_t nf = 0;
    for (int i = 0; found && windows && i < n; i++) {
        k->running = pg_row_int(res, i, 0);
        k->paused_until = pg_row_int(res, i, 1);
        if (PQgetisnull(res, i, 2))
            continue;
        struct limit *l = &found[nf];
        snprintf(l->key, sizeof l->key, "%s", PQgetvalue(res, i, 2));
        l->max_running = PQgetisnull(res, i, 3) ? 0 : pg_row_int(res, i, 3);
        l->rate_jobs = PQgetisnull(res, i, 4) ? 0 : pg_row_int(res, i, 4);
        l->rate_per_seconds = PQgetisnull(res, i, 5) ? 0 : pg_row_int(res, i, 5);
        windows[nf++] = PQgetisnull(res, i, 6) ? 0 : pg_row_int(res, i, 6);
    }
    if (!found || !windows) {
        free(found);
        free(windows);
        log_error("out of memory for the limits of a concurrency key");
        return STORE_ERROR;
    }
    const struct limit *l = limit_resolve(k->key, found, nf);
    k->has_limit = l != NULL;
    k->window = 0;
    if (l) {
        k->limit = *l;
        if (l->rate_jobs > 0)
            k->window = windows[l - found];
    }
    free(found);
    free(windows);
    enum store_result r = STORE_OK;
    if (k->has_limit && k->limit.rate_jobs > 0 && n > 0 && !PQgetisnull(res, 0, 7))
        r = key_moved(b, k, pg_row_int(res, 0, 7));
    k->room = lane_key_room(k);
    return r;
}

/* The rows of PG_LANES_CANDIDATES into cands (room for max), *n of them; *refresh 1 when
 * lanes of the queues wait to be looked at. STORE_OK, or STORE_ERROR (out of memory). */
static enum store_result cands_read(const PGresult *res, struct lane_cand *cands, size_t max,
                                    size_t *n, int *refresh)
{
    *n = 0;
    *refresh = 0;
    enum store_result r = STORE_OK;
    for (int i = 0; i < PQntuples(res) && *n < max; i++) {
        int64_t lane = pg_row_int(res, i, 0);
        if (lane < 0) {
            *refresh = 1;
            continue;
        }
        struct lane_cand *c = &cands[(*n)++];
        *c = (struct lane_cand){.lane = lane,
                                .id = pg_row_int(res, i, 1),
                                .priority = pg_row_int(res, i, 2),
                                .run_at = pg_row_int(res, i, 3)};
        if (!PQgetisnull(res, i, 4) && !(c->ckey = strdup(PQgetvalue(res, i, 4)))) {
            r = STORE_ERROR;
            break;
        }
    }
    return r;
}

/* The parameters of PG_LANES_CANDIDATES for req at now: params[0] is an array literal the
 * caller frees, the others point into ints or req. Returns 0, or -1 when memory ran out. */
static int cands_params(const struct claim_req *req, int64_t now, const char *params[4],
                        char ints[2][24])
{
    struct pg_arr queues = {0};
    for (size_t i = 0; i < req->nqueues && i < JOB_QUEUES_MAX; i++)
        pg_arr_text(&queues, req->queues[i]);
    int max_jobs = req->max_jobs > JOB_CLAIM_MAX ? JOB_CLAIM_MAX : req->max_jobs;
    params[0] = pg_arr_take(&queues);
    params[1] = int_param(ints[0], now);
    params[2] = req->capabilities;
    params[3] = int_param(ints[1], max_jobs);
    return params[0] ? 0 : -1;
}

/* The candidates of the claim into cands (room for max), *n of them; *refresh 1 when lanes
 * of the queues wait to be looked at: then they are looked at (PG_LANES_REFRESH). */
static enum store_result candidates(struct lanes_be *b, struct lane_cand *cands, size_t max,
                                    size_t *n, int *refresh)
{
    const char *params[4];
    char ints[2][24];
    *n = 0;
    *refresh = 0;
    if (cands_params(b->req, b->now, params, ints) != 0)
        return STORE_ERROR;
    char *lit = (char *)params[0];
    enum store_result r;
    PGresult *res =
        pg_conn_exec(b->c, PG_LANES_CANDIDATES, 4, params, "claim (lanes): candidates", &r);
    if (!res) {
        free(lit);
        return r;
    }
    r = cands_read(res, cands, max, n, refresh);
    PQclear(res);
    if (r == STORE_OK && *refresh) {
        const char *rp[2] = {lit, params[1]};
        res = pg_conn_exec(b->c, PG_LANES_REFRESH, 2, rp, "claim (lanes): refresh", &r);
        r = res ? STORE_OK : r;
        PQclear(res);
    }
    free(lit);
    return r;
}

/* Candidates read ahead, in the claim's group pipeline (pg_lanes_keep). */
struct lanes_kept {
    struct lane_cand *cands;
    size_t n;
    int refresh;
};

/* Room for the candidates of req. */
static size_t cands_max(const struct claim_req *req)
{
    int max_jobs = req->max_jobs > JOB_CLAIM_MAX ? JOB_CLAIM_MAX : req->max_jobs;
    size_t nq = req->nqueues > JOB_QUEUES_MAX ? JOB_QUEUES_MAX : req->nqueues;
    return nq * (2 * (size_t)max_jobs + LANES_EXTRA) + 1;
}

int pg_lanes_bind(struct pg_call *pc, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_LANES_CANDIDATES, .what = "claim (lanes): candidates", .n = 4};
    const char *params[4];
    char ints[2][24];
    if (cands_params(pc->call->claim.req, pc->now, params, ints) != 0) {
        log_error("out of memory for a claim's queues");
        return -1;
    }
    b->heap[0] = (char *)params[0];
    b->params[0] = params[0];
    b->params[1] = pg_int_param(b->ints[1], pc->now);
    b->params[2] = params[2];
    b->params[3] = strcpy(b->ints[3], params[3]);
    return 0;
}

enum store_result pg_lanes_keep(struct pg_call *pc, const PGresult *res)
{
    pg_lanes_drop(pc);
    struct lanes_kept *k = calloc(1, sizeof *k);
    if (k)
        k->cands = calloc(cands_max(pc->call->claim.req), sizeof *k->cands);
    if (!k || !k->cands ||
        cands_read(res, k->cands, cands_max(pc->call->claim.req), &k->n, &k->refresh) != STORE_OK) {
        log_error("out of memory for a claim's lanes");
        pc->lanes = k;
        pg_lanes_drop(pc);
        return STORE_ERROR;
    }
    pc->lanes = k;
    return STORE_OK;
}

void pg_lanes_drop(struct pg_call *pc)
{
    struct lanes_kept *k = pc->lanes;
    pc->lanes = NULL;
    if (!k)
        return;
    lane_cands_clear(k->cands, k->n);
    free(k->cands);
    free(k);
}

static int cand_cmp(const void *pa, const void *pb)
{
    const struct lane_cand *a = pa, *b = pb;
    return job_claim_order(a->priority, a->run_at, a->id, b->priority, b->run_at, b->id);
}

/* The claim's transaction on c. */
static enum store_result claim_tx(struct lanes_be *b, struct store_call *call,
                                  struct lane_cand *cands, size_t n, int max_jobs)
{
    qsort(cands, n, sizeof *cands, cand_cmp);
    size_t kept = n < 2 * (size_t)max_jobs + 64 ? n : 2 * (size_t)max_jobs + 64;
    struct lane_key *keys = calloc(kept + 1, sizeof *keys);
    if (!keys)
        return STORE_ERROR;
    enum store_result r = lane_claim_run(&pg_lane_ops, b, b->now, cands, kept, max_jobs, keys, kept,
                                         call->claim.out, &call->claim.n);
    lane_keys_clear(keys, kept);
    free(keys);
    return r;
}

enum store_result pg_lanes_claim(struct pg_conn *c, struct pg_call *pc, struct store_news *notes,
                                 int *more)
{
    *more = 0;
    struct store_call *call = pc->call;
    const struct claim_req *req = call->claim.req;
    int max_jobs = req->max_jobs > JOB_CLAIM_MAX ? JOB_CLAIM_MAX : req->max_jobs;
    size_t max = cands_max(req), n = 0;
    int refresh = 0;
    struct lanes_kept *kept = pc->lanes; /* read in the group's pipeline: no look of its own */
    pc->lanes = NULL;
    struct lane_cand *cands = kept ? kept->cands : calloc(max, sizeof *cands);
    if (kept) {
        n = kept->n;
        refresh = kept->refresh;
        free(kept);
    }
    pg_calls_clock(pc, 1); /* after the plain claim's statement and the follow-ups before it */
    struct lanes_be b = {.c = c, .now = pc->now, .req = req, .statement_ms = pc->st->statement_ms};
    call->claim.n = 0;
    if (!cands) {
        log_error("out of memory for a claim's lanes");
        return STORE_ERROR;
    }
    enum store_result r = kept ? STORE_OK : candidates(&b, cands, max, &n, &refresh);
    if (r == STORE_OK && kept && refresh) { /* candidates() looks at the lanes first */
        lane_cands_clear(cands, n);
        r = candidates(&b, cands, max, &n, &refresh);
    }
    if (r == STORE_OK && refresh) {
        lane_cands_clear(cands, n);
        r = candidates(&b, cands, max, &n, &refresh);
    }
    int outer = PQtransactionStatus(c->db) != PQTRANS_IDLE; /* in pg_one_tx's transaction */
    b.begun = outer; /* else the first statements of the claim send BEGIN before them */
    if (r == STORE_OK && n > 0) {
        r = claim_tx(&b, call, cands, n, max_jobs);
        if (!outer && b.begun && r == STORE_OK)
            r = pg_commit(c, pc->st->statement_ms, "claim (lanes)");
        else if (!outer && b.begun)
            pg_command(c, "ROLLBACK", "claim (lanes)");
        if (r == STORE_OK && !outer) {
            atomic_fetch_add(&pc->st->commits, b.begun ? 1 : 0);
            pg_news_publish(pc->st, &b.news);
        } else if (r == STORE_OK) {
            store_news_merge(notes, &b.news); /* committed with the caller's transaction */
        }
        for (size_t i = 0; i < n && !*more; i++)
            *more = cands[i].lane > 0 && cands[i].id != 0;
    }
    if (r != STORE_OK) {
        for (size_t i = 0; i < call->claim.n; i++)
            job_clear(&call->claim.out[i]);
        call->claim.n = 0;
    }
    store_news_clear(&b.news);
    lane_cands_clear(cands, n);
    free(cands);
    return r;
}
