/* store_enqueue for PostgreSQL: one set-based insert for every job of the call (and of the
 * enqueue calls that share its statement, see struct pg_one); an idempotency_key hit
 * (ON CONFLICT DO NOTHING, then the existing row, read after the commit) creates nothing. A
 * call with a dedup key or dependencies takes its own transaction instead (alone_tx, below;
 * dependencies without dedup: pg_enqueue_deps.c). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "job_cols.h"
#include "log.h"
#include "pg_deps.h"
#include "pg_enqueue.h"
#include "pg_row.h"

static int insert_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    int64_t now = pg_calls_now(calls, k); /* the database's clock: delays are resolved on it */
    struct pg_arr col[PG_INSERT_PARAMS] = {{0}};
    for (size_t i = 0; i < k; i++) {
        const struct store_call *call = calls[i].call;
        for (size_t s = 0; s < call->enqueue.n; s++)
            pg_insert_cols(col, &call->enqueue.specs[s], now);
    }
    return pg_insert_params(col, now, b);
}

static atomic_int rows_reversed; /* pg_enqueue_reverse_rows() */

void pg_enqueue_reverse_rows(int on)
{
    atomic_store(&rows_reversed, on);
}

/* The index in res of the n-th row read. */
static int row_at(int n, int rows)
{
    return atomic_load(&rows_reversed) ? rows - 1 - n : n;
}

/* Element ord (1-based, over the specs of calls[0..k) in order, as insert_bind sent them):
 * the index of its call, and *spec its spec there; k when there is none. */
static size_t element(const struct pg_call *calls, size_t k, int64_t ord, size_t *spec)
{
    size_t i = 0;
    for (; i < k && ord > 0; i++) {
        size_t n = calls[i].call->enqueue.n;
        if ((uint64_t)ord <= n) {
            *spec = (size_t)ord - 1;
            return i;
        }
        ord -= (int64_t)n;
    }
    return k;
}

/* Each row is the new job of the element its last column names (the rows come back in no
 * promised order); an element without a row hit its idempotency_key. */
static void insert_recv(struct pg_call *calls, size_t k, const PGresult *res,
                        struct store_news *notes)
{
    int64_t now = pg_calls_now(calls, k);
    for (size_t i = 0; i < k; i++) {
        const struct store_enqueue_call *e = &calls[i].call->enqueue;
        calls[i].call->result = STORE_OK;
        memset(e->created, 0, e->n * sizeof *e->created);
    }
    int rows = PQntuples(res);
    for (int n = 0; n < rows; n++) {
        int row = row_at(n, rows);
        size_t s = 0, i = element(calls, k, pg_row_int(res, row, COL_COUNT), &s);
        if (i == k || calls[i].call->enqueue.created[s]) {
            log_error("enqueue: an inserted row names no element of the statement");
            continue;
        }
        struct store_call *call = calls[i].call;
        struct job *out = &call->enqueue.out[s];
        call->enqueue.created[s] = 1;
        if (pg_row_job(res, row, 0, out) != 0) {
            call->result = STORE_ERROR;
            continue;
        }
        pg_note_queued(notes, out, now);
    }
    for (size_t i = 0; i < k; i++) {
        struct store_call *call = calls[i].call;
        calls[i].follow = 0;
        for (size_t s = 0; s < call->enqueue.n; s++) {
            if (call->enqueue.created[s])
                continue;
            if (!call->enqueue.specs[s].idempotency_key) {
                log_error("enqueue: no row came back for a job without an idempotency_key");
                call->result = STORE_ERROR;
            }
            calls[i].follow = 1; /* the existing job, read after the commit */
        }
        if (call->result != STORE_OK)
            calls[i].follow = 0;
    }
}

/* The existing jobs of the specs that hit their idempotency_key. */
static enum store_result insert_follow(struct pg_conn *c, struct pg_call *a,
                                       struct store_news *notes)
{
    (void)notes;
    struct store_call *call = a->call;
    for (size_t s = 0; s < call->enqueue.n; s++) {
        if (call->enqueue.created[s])
            continue;
        enum store_result r =
            pg_idempotency_find(c, &call->enqueue.specs[s], &call->enqueue.out[s]);
        if (r == STORE_NOT_FOUND)
            r = STORE_BUSY; /* inserted by a transaction that rolled back */
        if (r != STORE_OK)
            return r;
    }
    return call->enqueue.n == 1 ? STORE_EXISTS : STORE_OK;
}

static int insert_same(const struct pg_call *a, const struct pg_call *b)
{
    (void)a;
    (void)b;
    return 1;
}

static const struct pg_one enqueue_one = {insert_bind, insert_recv, insert_follow, insert_same, 0};

static void enqueue_discard(void *p)
{
    struct pg_call *a = p;
    for (size_t i = 0; i < a->call->enqueue.n; i++)
        job_clear(&a->call->enqueue.out[i]);
}

/* Dedup (dedup.h): a call with a dedup key runs as a transaction of its own statements
 * (alone, or with other such calls in one group), never in the shared insert. It first takes
 * the lock of each (queue, dedup key) it holds (PG_DEDUP_LOCK), so the enqueues of one key, in
 * every process, run their lookup and their write one after the other; each lookup is a
 * statement after the lock, so it sees what the previous holder committed (READ COMMITTED).
 * Then its elements go in order, so a later element sees what an earlier one did. */

/* Lock every (queue, dedup key) of e's specs for the rest of the transaction. */
static enum store_result dedup_lock(struct pg_conn *c, const struct store_enqueue_call *e)
{
    struct pg_arr a[2] = {{0}};
    for (size_t s = 0; s < e->n; s++) {
        if (e->specs[s].dedup_key) {
            pg_arr_text(&a[0], e->specs[s].queue);
            pg_arr_text(&a[1], e->specs[s].dedup_key);
        }
    }
    return pg_run_arrays(c, PG_DEDUP_LOCK, a, 2, "enqueue: dedup lock");
}

/* Insert one job of sp at now on its own into *out (*created = 1), or read the job that
 * holds its idempotency_key; ids[0..nids): its dependencies, distinct (NULL when it has
 * none). */
static enum store_result insert_alone(struct pg_conn *c, const struct job_spec *sp,
                                      const int64_t *ids, size_t nids, int64_t now, struct job *out,
                                      int *created, struct store_news *notes, int64_t *missing)
{
    if (ids)
        return pg_enqueue_dep_one(c, sp, ids, nids, now, out, created, notes, missing);
    struct pg_arr col[PG_INSERT_PARAMS] = {{0}};
    pg_insert_cols(col, sp, now);
    struct pg_bind b;
    if (pg_insert_params(col, now, &b) != 0)
        return STORE_ERROR;
    enum store_result r;
    PGresult *res = pg_conn_exec(c, b.id, b.n, b.params, b.what, &r);
    pg_bind_free(&b);
    if (!res)
        return r;
    int rows = PQntuples(res);
    r = rows == 1 && pg_row_job(res, 0, 0, out) != 0 ? STORE_ERROR : STORE_OK;
    PQclear(res);
    if (r != STORE_OK)
        return r;
    if (rows == 1) {
        *created = 1;
        pg_note_queued(notes, out, now);
        return STORE_OK;
    }
    r = sp->idempotency_key ? pg_idempotency_find(c, sp, out) : STORE_ERROR;
    if (r == STORE_NOT_FOUND)
        r = STORE_BUSY; /* inserted by a transaction that rolled back */
    return r;
}

/* The lookup of each mode: the job dedup_decide is given (pg_stmt.c says which). */
static const enum pg_stmt_id dedup_find_stmt[DEDUP_MODE_COUNT] = {
    [DEDUP_ACTIVE] = PG_DEDUP_ACTIVE,
    [DEDUP_WINDOW] = PG_DEDUP_WINDOW,
    [DEDUP_DEBOUNCE] = PG_DEDUP_DEBOUNCE,
};

/* The job that the lookup of sp's dedup mode finds into *out: STORE_OK, or STORE_NOT_FOUND. */
static enum store_result dedup_find(struct pg_conn *c, const struct job_spec *sp, struct job *out)
{
    const char *key[2] = {sp->queue, sp->dedup_key};
    enum store_result r;
    PGresult *res =
        pg_conn_exec(c, dedup_find_stmt[sp->dedup_mode], 2, key, "enqueue: dedup lookup", &r);
    if (!res)
        return r;
    r = PQntuples(res) == 1 ? (pg_row_job(res, 0, 0, out) == 0 ? STORE_OK : STORE_ERROR)
                            : STORE_NOT_FOUND;
    PQclear(res);
    return r;
}

/* Debounce: job id (found queued and never claimed) takes sp's payload and is due at run_at;
 * *out is the job as updated. STORE_NOT_FOUND when a claim took it since the lookup. */
static enum store_result dedup_replace(struct pg_conn *c, const struct job_spec *sp, int64_t id,
                                       int64_t run_at, int64_t now, struct job *out,
                                       struct store_news *notes)
{
    char ids[24], runs[24];
    const char *p[3] = {pg_int_param(ids, id), sp->payload, pg_int_param(runs, run_at)};
    enum store_result r = pg_one_row(c, PG_DEDUP_REPLACE, 3, p, 0, "enqueue: dedup replace", out);
    if (r == STORE_OK)
        pg_note_queued(notes, out, now);
    return r;
}

/* Enqueue sp, which has a dedup key, its lock held: an idempotency_key hit first (its job, as
 * without dedup), else what dedup_decide says of the job the lookup of its mode finds: create
 * it (a debounce due at now + seconds), answer the job found, or replace the job found. */
static enum store_result dedup_one(struct pg_conn *c, const struct job_spec *sp, const int64_t *ids,
                                   size_t nids, int64_t now, struct job *out, int *created,
                                   struct store_news *notes, int64_t *missing)
{
    enum store_result r = STORE_NOT_FOUND;
    if (sp->idempotency_key)
        r = pg_idempotency_find(c, sp, out);
    if (r != STORE_NOT_FOUND)
        return r; /* a hit (created stays 0), or an error */
    struct job found = {0};
    r = dedup_find(c, sp, &found);
    if (r != STORE_OK && r != STORE_NOT_FOUND)
        return r;
    struct dedup_plan plan = dedup_decide_spec(sp, r == STORE_OK ? &found : NULL, now);
    if (plan.action == DEDUP_RETURN_EXISTING) {
        *out = found; /* created stays 0 */
        return STORE_OK;
    }
    int64_t id = found.id;
    job_clear(&found);
    if (plan.action == DEDUP_REPLACE_EXISTING) {
        r = dedup_replace(c, sp, id, plan.run_at, now, out, notes);
        if (r != STORE_NOT_FOUND)
            return r; /* replaced (created stays 0), or an error */
    }
    struct job_spec spec = *sp;
    if (plan.run_at != JOB_NONE)
        spec.run_at = plan.run_at;
    return insert_alone(c, &spec, ids, nids, now, out, created, notes, missing);
}

enum store_result pg_enqueue_one(struct pg_conn *c, const struct job_spec *sp, int64_t now,
                                 struct job *out, int *created, struct store_news *notes)
{
    int64_t missing = 0; /* a schedule's job has no dependencies */
    if (!sp->dedup_key)
        return insert_alone(c, sp, NULL, 0, now, out, created, notes, &missing);
    const struct store_enqueue_call one = {.specs = sp, .n = 1};
    enum store_result r = dedup_lock(c, &one);
    return r == STORE_OK ? dedup_one(c, sp, NULL, 0, now, out, created, notes, &missing) : r;
}

/* 1 when one of the call's specs has a dedup key (what = 0) or dependencies (what = 1). */
static int has_any(const struct store_enqueue_call *e, int what)
{
    for (size_t s = 0; s < e->n; s++) {
        if (what ? e->specs[s].ndeps > 0 : e->specs[s].dedup_key != NULL)
            return 1;
    }
    return 0;
}

/* Lock every existing job the call's specs depend on, all at once and in id order (two
 * batches that share dependencies never lock them in opposite orders), before any element is
 * inserted. One that does not exist is no failure here: an element that hits its
 * idempotency_key writes nothing, and the others find it missing when they are planned. */
static enum store_result lock_dependencies(struct pg_conn *c, struct store_enqueue_call *e)
{
    size_t n = 0;
    for (size_t s = 0; s < e->n; s++)
        for (size_t d = 0; d < e->specs[s].ndeps; d++)
            n += e->specs[s].deps[d].id > 0;
    if (n == 0)
        return STORE_OK;
    int64_t *ids = malloc(n * sizeof *ids);
    enum store_result r = ids ? STORE_OK : STORE_ERROR;
    size_t k = 0;
    for (size_t s = 0; r == STORE_OK && s < e->n; s++)
        for (size_t d = 0; d < e->specs[s].ndeps; d++)
            if (e->specs[s].deps[d].id > 0)
                ids[k++] = e->specs[s].deps[d].id;
    int64_t missing = 0;
    if (r == STORE_OK)
        r = pg_deps_lock(c, ids, n, NULL, &missing);
    if (r == STORE_NOT_FOUND)
        r = STORE_OK; /* every one that exists is locked all the same */
    free(ids);
    return r;
}

static int key_cmp(const void *a, const void *b)
{
    const struct job_spec *x = *(const struct job_spec *const *)a;
    const struct job_spec *y = *(const struct job_spec *const *)b;
    int q = strcmp(x->queue, y->queue);
    return q ? q : strcmp(x->idempotency_key, y->idempotency_key);
}

/* 1 when two of e's specs hold one (queue, idempotency_key) (the later one hits the earlier
 * in this very transaction), or memory ran out; else 0. */
static int keys_repeat(const struct store_enqueue_call *e)
{
    const struct job_spec **at = malloc(e->n * sizeof *at);
    size_t k = 0;
    if (!at)
        return 1;
    for (size_t s = 0; s < e->n; s++)
        if (e->specs[s].idempotency_key)
            at[k++] = &e->specs[s];
    qsort(at, k, sizeof *at, key_cmp);
    int repeat = 0;
    for (size_t i = 1; i < k && !repeat; i++)
        repeat = key_cmp(&at[i - 1], &at[i]) == 0;
    free(at);
    return repeat;
}

/* The start of an enqueue transaction on e: its outputs cleared, and the order in which its
 * elements go in (depend_order's: an element's index dependencies before it) into a new array
 * *order (NULL when none has dependencies). Returns 0, or -1 (logged). */
static int batch_start(struct store_enqueue_call *e, size_t **order)
{
    memset(e->out, 0, e->n * sizeof *e->out);
    memset(e->created, 0, e->n * sizeof *e->created);
    *order = NULL;
    if (!has_any(e, 1))
        return 0;
    *order = malloc(e->n * sizeof **order);
    if (*order && depend_order(e->specs, e->n, *order) == -1)
        return 0;
    log_error("enqueue: the batch's dependencies cannot be ordered");
    free(*order);
    *order = NULL;
    return -1;
}

/* What an enqueue transaction answers after its elements went as r says. */
static enum store_result batch_result(const struct store_enqueue_call *e, enum store_result r)
{
    if (r != STORE_OK)
        return r;
    return e->n == 1 && !e->created[0] ? STORE_EXISTS : STORE_OK;
}

/* The transaction of an enqueue call with dependencies and no dedup key, set-based
 * (pg_enqueue_deps.c; struct pg_tx's fn, arg its pg_call). */
static enum store_result deps_tx(struct pg_conn *c, void *arg, struct store_news *notes)
{
    struct pg_call *pc = arg;
    struct store_enqueue_call *e = &pc->call->enqueue;
    size_t *order;
    if (batch_start(e, &order) != 0)
        return STORE_ERROR;
    enum store_result r = pg_enqueue_deps(c, e, order, pc->now, notes);
    free(order);
    return batch_result(e, r);
}

/* The transaction of an enqueue call with a dedup key, or with dependencies and one
 * idempotency_key twice (struct pg_tx's fn, arg its pg_call): elements one at a time, in
 * depend_order's order (an element's index dependencies are inserted before it). */
static enum store_result alone_tx(struct pg_conn *c, void *arg, struct store_news *notes)
{
    struct pg_call *pc = arg;
    struct store_enqueue_call *e = &pc->call->enqueue;
    size_t *order;
    if (batch_start(e, &order) != 0)
        return STORE_ERROR;
    int deps = order != NULL;
    int64_t *ids = deps ? malloc(JOB_DEPS_MAX * sizeof *ids) : NULL;
    if (deps && !ids) {
        free(order);
        return STORE_ERROR;
    }
    enum store_result r = has_any(e, 0) ? dedup_lock(c, e) : STORE_OK;
    if (r == STORE_OK && deps)
        r = lock_dependencies(c, e);
    pg_calls_clock(pc, 1); /* the locks may have waited: decide at the time they were taken */
    for (size_t k = 0; k < e->n && r == STORE_OK; k++) {
        size_t s = order ? order[k] : k;
        const struct job_spec *sp = &e->specs[s];
        const int64_t *dep_ids = NULL;
        long nids = 0;
        if (sp->ndeps > 0) {
            for (size_t d = 0; d < sp->ndeps; d++)
                ids[d] = sp->deps[d].id > 0 ? sp->deps[d].id : e->out[sp->deps[d].index].id;
            nids = depend_unique(ids, sp->ndeps); /* an id and a ref of one job count once */
            if (nids < 0) {
                r = STORE_ERROR;
                break;
            }
            dep_ids = ids;
        }
        e->missing_id = 0;
        r = sp->dedup_key ? dedup_one(c, sp, dep_ids, (size_t)nids, pc->now, &e->out[s],
                                      &e->created[s], notes, &e->missing_id)
                          : insert_alone(c, sp, dep_ids, (size_t)nids, pc->now, &e->out[s],
                                         &e->created[s], notes, &e->missing_id);
        if (r == STORE_NOT_FOUND)
            e->missing_spec = s;
    }
    free(order);
    free(ids);
    return batch_result(e, r);
}

int pg_enqueue_prepare(struct pg_call *pc)
{
    struct store_call *call = pc->call;
    if (call->enqueue.n == 0) {
        call->result = STORE_OK;
        return 0;
    }
    memset(call->enqueue.out, 0, call->enqueue.n * sizeof *call->enqueue.out);
    memset(call->enqueue.created, 0, call->enqueue.n * sizeof *call->enqueue.created);
    int dedup = has_any(&call->enqueue, 0), deps = has_any(&call->enqueue, 1);
    if (deps && !dedup && !keys_repeat(&call->enqueue)) {
        pc->tx = (struct pg_tx){.name = "enqueue", .fn = deps_tx, .discard = enqueue_discard};
        return 1;
    }
    if (dedup || deps) {
        pc->tx = (struct pg_tx){.name = "enqueue", .fn = alone_tx, .discard = enqueue_discard};
        return 1;
    }
    pc->tx = (struct pg_tx){.name = "enqueue", .fn = pg_one_tx, .discard = enqueue_discard};
    pc->one = &enqueue_one;
    return 1;
}
