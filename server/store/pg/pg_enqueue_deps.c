/* Enqueue of jobs with dependencies on PostgreSQL (pg_enqueue.h). A batch costs a fixed number
 * of round trips, whatever its size: its idempotency hits read (PG_JOB_BY_KEYS), the jobs it
 * depends on locked and read (PG_DEP_LOCK), its new ids drawn (PG_JOB_IDS), every new job
 * inserted with its planned status (PG_JOB_INSERT), every edge inserted (PG_DEP_EDGES). The
 * plans are depend.h's, made here in depend_order's order: a new element's status is known
 * before it is written, so a later element that depends on it plans from it. */
#include <stdlib.h>
#include <string.h>

#include "depend.h"
#include "job_cols.h"
#include "log.h"
#include "pg_deps.h"
#include "pg_enqueue.h"
#include "pg_row.h"

/* The columns of a job with dependencies, after the plain ones (pg_enqueue.h). */
enum {
    COL_GID = PG_INSERT_PLAIN,
    COL_ST,
    COL_DEPS,
    COL_MODE,
    COL_PENDING,
    COL_HAS,
    COL_CODE,
    COL_DETAIL,
    COL_FIN
};

/* Append a new job of sp to col[]: id gid (JOB_NONE: from the sequence), its plan, the text
 * of its dependency ids (NULL: none), and whether a job of the batch depends on it. */
static void add_planned(struct pg_arr col[PG_INSERT_PARAMS], const struct job_spec *sp, int64_t gid,
                        const char *text, const struct depend_plan *plan, int needed, int64_t now)
{
    char detail[DEPEND_DETAIL_MAX];
    int cancelled = plan->status == JOB_CANCELLED;
    pg_insert_cols(col, sp, now);
    pg_arr_int(&col[COL_GID], gid);
    pg_arr_int(&col[COL_ST], plan->status);
    pg_arr_text(&col[COL_DEPS], text);
    pg_arr_int(&col[COL_MODE], sp->ndeps ? sp->on_dependency_failure : DEP_CANCEL); /* as kept */
    pg_arr_int(&col[COL_PENDING], plan->pending);
    pg_arr_bool(&col[COL_HAS], needed);
    pg_arr_text(&col[COL_CODE], cancelled ? DEPEND_FAILED_CODE : NULL);
    pg_arr_text(&col[COL_DETAIL], cancelled ? depend_detail(plan->cancel_dep, detail) : NULL);
    pg_arr_int(&col[COL_FIN], cancelled ? now : JOB_NONE);
}

/* The element of e that row of res names in its last column (1-based, an index of spec_of,
 * of k entries); e->n when it names none. */
static size_t element_of(const PGresult *res, int row, const size_t *spec_of, size_t k,
                         const struct store_enqueue_call *e)
{
    int64_t ord = pg_row_int(res, row, COL_COUNT);
    return ord >= 1 && (size_t)ord <= k ? spec_of[ord - 1] : e->n;
}

/* Insert the jobs in col[] (rows of them; row i is element spec_of[i] of e): each into
 * e->out, created; *got is how many went in (fewer: an idempotency_key was taken since).
 * STORE_OK, or why the statement failed (the transaction is then aborted). */
static enum store_result insert_planned(struct pg_conn *c, struct store_enqueue_call *e,
                                        struct pg_arr col[PG_INSERT_PARAMS], const size_t *spec_of,
                                        size_t rows, size_t *got, int64_t now,
                                        struct store_news *notes)
{
    *got = 0;
    struct pg_bind b;
    if (pg_insert_params(col, now, &b) != 0)
        return STORE_ERROR;
    enum store_result r;
    PGresult *res = pg_conn_exec(c, b.id, b.n, b.params, "enqueue with dependencies", &r);
    pg_bind_free(&b);
    if (!res)
        return r;
    r = STORE_OK;
    for (int row = 0; r == STORE_OK && row < PQntuples(res); row++) {
        size_t s = element_of(res, row, spec_of, rows, e);
        if (s == e->n || e->created[s] || pg_row_job(res, row, 0, &e->out[s]) != 0) {
            log_error("enqueue: an inserted row names no element of the statement");
            r = STORE_ERROR;
            break;
        }
        e->created[s] = 1;
        (*got)++;
        pg_note_queued(notes, &e->out[s], now);
    }
    PQclear(res);
    return r;
}

/* A batch on its way (pg_enqueue_deps). */
struct batch {
    struct store_enqueue_call *e;
    unsigned char *hit;      /* [n]: an idempotency_key hit (its job in e->out) */
    unsigned char *needed;   /* [n]: an element of the batch depends on it */
    enum job_status *status; /* [n]: a new job's planned status (a hit's: locked_status) */
    int64_t *id;             /* [n]: the job's id (new: drawn; hit: its own) */
    int64_t *locked;         /* [nlocked]: the jobs locked, ascending */
    enum job_status *locked_status;
    size_t nlocked;
};

/* The idempotency hits of b's elements: their jobs into e->out, hit[] set. */
static enum store_result find_hits(struct pg_conn *c, struct batch *b)
{
    struct store_enqueue_call *e = b->e;
    size_t *spec_of = malloc(e->n * sizeof *spec_of), k = 0;
    if (!spec_of)
        return STORE_ERROR;
    struct pg_arr a[2] = {{0}};
    for (size_t s = 0; s < e->n; s++) {
        if (e->specs[s].idempotency_key) {
            pg_arr_text(&a[0], e->specs[s].queue);
            pg_arr_text(&a[1], e->specs[s].idempotency_key);
            spec_of[k++] = s;
        }
    }
    struct pg_bind bind = {.id = PG_JOB_BY_KEYS, .what = "enqueue: idempotency hits", .n = 2};
    int rc = pg_arr_bind(&a[0], &bind, 0);
    rc |= pg_arr_bind(&a[1], &bind, 1);
    enum store_result r = rc == 0 ? STORE_OK : STORE_ERROR;
    PGresult *res =
        k > 0 && rc == 0 ? pg_conn_exec(c, bind.id, 2, bind.params, bind.what, &r) : NULL;
    pg_bind_free(&bind);
    for (int row = 0; res && r == STORE_OK && row < PQntuples(res); row++) {
        size_t s = element_of(res, row, spec_of, k, e);
        if (s == e->n || b->hit[s] || pg_row_job(res, row, 0, &e->out[s]) != 0) {
            log_error("enqueue: an idempotency hit names no element of the statement");
            r = STORE_ERROR;
            break;
        }
        b->hit[s] = 1;
        b->id[s] = e->out[s].id;
    }
    PQclear(res);
    free(spec_of);
    return r;
}

static int id_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* The index of id in b->locked (it is there). */
static size_t locked_at(const struct batch *b, int64_t id)
{
    const int64_t *f = bsearch(&id, b->locked, b->nlocked, sizeof id, id_cmp);
    return (size_t)(f - b->locked);
}

/* Lock every existing job b depends on (the ids named, and the hits an element names), all at
 * once in id order, and read their statuses. */
static enum store_result lock_all(struct pg_conn *c, struct batch *b)
{
    struct store_enqueue_call *e = b->e;
    size_t n = 0;
    for (size_t s = 0; s < e->n; s++) {
        n += b->hit[s] && b->needed[s];
        for (size_t d = 0; !b->hit[s] && d < e->specs[s].ndeps; d++) /* a hit writes nothing */
            n += e->specs[s].deps[d].id > 0;
    }
    if (n == 0)
        return STORE_OK;
    b->locked = malloc(n * sizeof *b->locked);
    b->locked_status = malloc(n * sizeof *b->locked_status);
    if (!b->locked || !b->locked_status)
        return STORE_ERROR;
    size_t k = 0;
    for (size_t s = 0; s < e->n; s++) {
        if (b->hit[s] && b->needed[s])
            b->locked[k++] = b->id[s];
        for (size_t d = 0; !b->hit[s] && d < e->specs[s].ndeps; d++)
            if (e->specs[s].deps[d].id > 0)
                b->locked[k++] = e->specs[s].deps[d].id;
    }
    qsort(b->locked, n, sizeof *b->locked, id_cmp);
    for (size_t i = 0; i < n; i++)
        if (b->nlocked == 0 || b->locked[b->nlocked - 1] != b->locked[i])
            b->locked[b->nlocked++] = b->locked[i];
    int64_t missing = 0;
    enum store_result r = pg_deps_lock(c, b->locked, b->nlocked, b->locked_status, &missing);
    if (r != STORE_NOT_FOUND)
        return r;
    for (size_t s = 0; s < e->n; s++) {
        for (size_t d = 0; !b->hit[s] && d < e->specs[s].ndeps; d++) {
            if (e->specs[s].deps[d].id == missing) {
                e->missing_spec = s;
                e->missing_id = missing;
                return STORE_NOT_FOUND;
            }
        }
    }
    return STORE_BUSY; /* a hit's job deleted since it was read: again, from the start */
}

/* Draw the ids of b's new elements, ascending in the order given. */
static enum store_result draw_ids(struct pg_conn *c, struct batch *b, const size_t *order)
{
    struct store_enqueue_call *e = b->e;
    size_t fresh = 0;
    for (size_t s = 0; s < e->n; s++)
        fresh += !b->hit[s];
    if (fresh == 0)
        return STORE_OK;
    char nb[24];
    const char *p[1] = {pg_int_param(nb, (int64_t)fresh)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_JOB_IDS, 1, p, "enqueue: ids", &r);
    if (!res)
        return r;
    int64_t *ids = (size_t)PQntuples(res) == fresh ? malloc(fresh * sizeof *ids) : NULL;
    for (size_t i = 0; ids && i < fresh; i++)
        ids[i] = pg_row_int(res, (int)i, 0);
    PQclear(res);
    if (!ids)
        return STORE_ERROR;
    qsort(ids, fresh, sizeof *ids, id_cmp);
    size_t k = 0;
    for (size_t i = 0; i < e->n; i++)
        if (!b->hit[order[i]])
            b->id[order[i]] = ids[k++];
    free(ids);
    return STORE_OK;
}

/* Plan every new element of b in order and write them: the jobs, then the edges. */
static enum store_result plan_and_insert(struct pg_conn *c, struct batch *b, const size_t *order,
                                         int64_t now, struct store_news *notes)
{
    struct store_enqueue_call *e = b->e;
    struct pg_arr col[PG_INSERT_PARAMS] = {{0}}, edge[3] = {{0}};
    size_t *spec_of = malloc(e->n * sizeof *spec_of), rows = 0, got = 0;
    int64_t *ids = malloc(JOB_DEPS_MAX * sizeof *ids);
    unsigned char *repeat = malloc(JOB_DEPS_MAX);
    enum store_result r = spec_of && ids && repeat ? STORE_OK : STORE_ERROR;
    for (size_t i = 0; i < e->n && r == STORE_OK; i++) {
        size_t s = order[i];
        const struct job_spec *sp = &e->specs[s];
        if (b->hit[s])
            continue;
        for (size_t d = 0; d < sp->ndeps; d++)
            ids[d] = sp->deps[d].id > 0 ? sp->deps[d].id : b->id[sp->deps[d].index];
        if (depend_repeats(ids, sp->ndeps, repeat) < 0) {
            r = STORE_ERROR;
            break;
        }
        int64_t waiting = 0, cancel_dep = 0;
        size_t n = 0;
        for (size_t d = 0; d < sp->ndeps; d++) {
            if (repeat[d])
                continue; /* an id and a ref of one job: one edge */
            const struct job_dep *dep = &sp->deps[d];
            size_t at = (size_t)dep->index;
            enum job_status st =
                dep->id > 0 || b->hit[at] ? b->locked_status[locked_at(b, ids[d])] : b->status[at];
            enum depend_effect eff = depend_effect(st, sp->on_dependency_failure);
            waiting += eff == DEPEND_WAIT;
            if (eff == DEPEND_CANCEL && cancel_dep == 0)
                cancel_dep = ids[d];
            pg_arr_int(&edge[0], ids[d]);
            pg_arr_int(&edge[1], b->id[s]);
            pg_arr_bool(&edge[2], eff != DEPEND_WAIT);
            ids[n++] = ids[d];
        }
        struct depend_plan plan = depend_plan(waiting, cancel_dep);
        char *text = n ? depend_ids_text(ids, n) : NULL;
        if (n && !text)
            r = STORE_ERROR;
        b->status[s] = plan.status;
        add_planned(col, sp, b->id[s], text, &plan, b->needed[s], now);
        free(text);
        spec_of[rows++] = s;
    }
    if (r == STORE_OK && rows > 0)
        r = insert_planned(c, e, col, spec_of, rows, &got, now, notes);
    if (r == STORE_OK && got != rows)
        r = STORE_BUSY; /* a key taken meanwhile: again, from the start (it is a hit then) */
    for (int i = 0; i < PG_INSERT_PARAMS; i++) /* what insert_planned did not take */
        free(pg_arr_take(&col[i]));
    if (r == STORE_OK && edge[0].s)
        r = pg_run_arrays(c, PG_DEP_EDGES, edge, 3, "enqueue: edges");
    for (int i = 0; i < 3; i++)
        free(pg_arr_take(&edge[i]));
    free(spec_of);
    free(ids);
    free(repeat);
    return r;
}

enum store_result pg_enqueue_deps(struct pg_conn *c, struct store_enqueue_call *e,
                                  const size_t *order, int64_t now, struct store_news *notes)
{
    struct batch b = {.e = e};
    b.hit = calloc(e->n, 1);
    b.needed = calloc(e->n, 1);
    b.status = calloc(e->n, sizeof *b.status);
    b.id = calloc(e->n, sizeof *b.id);
    enum store_result r = b.hit && b.needed && b.status && b.id ? STORE_OK : STORE_ERROR;
    for (size_t s = 0; r == STORE_OK && s < e->n; s++)
        for (size_t d = 0; d < e->specs[s].ndeps; d++)
            if (e->specs[s].deps[d].id == 0)
                b.needed[e->specs[s].deps[d].index] = 1;
    if (r == STORE_OK)
        r = find_hits(c, &b);
    if (r == STORE_OK)
        r = lock_all(c, &b);
    if (r == STORE_OK)
        r = draw_ids(c, &b, order);
    if (r == STORE_OK)
        r = plan_and_insert(c, &b, order, now, notes);
    free(b.hit);
    free(b.needed);
    free(b.status);
    free(b.id);
    free(b.locked);
    free(b.locked_status);
    return r;
}

enum store_result pg_enqueue_dep_one(struct pg_conn *c, const struct job_spec *sp,
                                     const int64_t *ids, size_t n, int64_t now, struct job *out,
                                     int *created, struct store_news *notes, int64_t *missing)
{
    *created = 0;
    /* A hit writes nothing, whatever became of its dependencies. A spec with a dedup key comes
     * from dedup_one, which looked its key up first. */
    if (sp->idempotency_key && !sp->dedup_key) {
        enum store_result r = pg_idempotency_find(c, sp, out);
        if (r != STORE_NOT_FOUND)
            return r;
    }
    unsigned char *settled = malloc(n ? n : 1);
    char *text = depend_ids_text(ids, n);
    struct depend_plan plan = {0};
    enum store_result r = settled && text ? STORE_OK : STORE_ERROR;
    if (r == STORE_OK)
        r = pg_deps_plan(c, ids, n, sp->on_dependency_failure, settled, &plan, missing);
    struct pg_arr col[PG_INSERT_PARAMS] = {{0}}, edge[3] = {{0}};
    size_t got = 0;
    if (r == STORE_OK) {
        add_planned(col, sp, JOB_NONE, text, &plan, 0, now);
        struct store_enqueue_call one = {.specs = sp, .n = 1, .out = out, .created = created};
        size_t spec_of[1] = {0};
        r = insert_planned(c, &one, col, spec_of, 1, &got, now, notes);
    }
    if (r == STORE_OK && got == 0) { /* its key was taken since the lookup: again */
        free(settled);
        free(text);
        return STORE_BUSY;
    }
    for (size_t d = 0; r == STORE_OK && d < n; d++) {
        pg_arr_int(&edge[0], ids[d]);
        pg_arr_int(&edge[1], out->id);
        pg_arr_bool(&edge[2], settled[d]);
    }
    if (r == STORE_OK)
        r = pg_run_arrays(c, PG_DEP_EDGES, edge, 3, "enqueue: edges");
    for (int i = 0; i < 3; i++)
        free(pg_arr_take(&edge[i]));
    free(settled);
    free(text);
    return r;
}
