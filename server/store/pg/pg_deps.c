/* Workflows on PostgreSQL (pg_deps.h). */
#include "pg_deps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_row.h"

/* Run statement id with n parameters and drop its rows: STORE_OK or the failure. */
static enum store_result run(struct pg_conn *c, enum pg_stmt_id id, int n, const char *const *p,
                             const char *what)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, p, what, &r);
    PQclear(res);
    return res ? STORE_OK : r;
}

/* ids[0..n) as a bigint[] literal into a new string (NULL: out of memory, logged). */
static char *ids_literal(const int64_t *ids, size_t n)
{
    struct pg_arr a = {0};
    for (size_t i = 0; i < n; i++)
        pg_arr_int(&a, ids[i]);
    char *lit = pg_arr_take(&a);
    if (!lit)
        log_error("out of memory for %zu dependency ids", n);
    return lit;
}

struct dep_row {
    int64_t id;
    enum job_status status;
};

static int dep_row_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct dep_row *)a)->id, y = ((const struct dep_row *)b)->id;
    return x < y ? -1 : x > y;
}

enum store_result pg_deps_lock(struct pg_conn *c, const int64_t *ids, size_t n,
                               enum job_status *status, int64_t *missing)
{
    char *lit = ids_literal(ids, n);
    if (!lit)
        return STORE_ERROR;
    const char *p[1] = {lit};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_DEP_LOCK, 1, p, "enqueue: dependencies", &r);
    free(lit);
    if (!res)
        return r;
    int rows = PQntuples(res);
    struct dep_row *got = malloc((size_t)(rows ? rows : 1) * sizeof *got);
    r = got ? STORE_OK : STORE_ERROR;
    for (int k = 0; got && k < rows; k++)
        got[k] = (struct dep_row){pg_row_int(res, k, 0), (enum job_status)pg_row_int(res, k, 1)};
    PQclear(res);
    if (got)
        qsort(got, (size_t)rows, sizeof *got, dep_row_cmp);
    for (size_t i = 0; i < n && r == STORE_OK; i++) {
        struct dep_row key = {.id = ids[i]};
        const struct dep_row *f = bsearch(&key, got, (size_t)rows, sizeof *got, dep_row_cmp);
        if (!f) {
            *missing = ids[i];
            r = STORE_NOT_FOUND;
        } else if (status) {
            status[i] = f->status;
        }
    }
    free(got);
    return r;
}

enum store_result pg_deps_plan(struct pg_conn *c, const int64_t *ids, size_t n, enum dep_mode mode,
                               unsigned char *settled, struct depend_plan *plan, int64_t *missing)
{
    enum job_status *status = malloc((n ? n : 1) * sizeof *status);
    enum store_result r = status ? pg_deps_lock(c, ids, n, status, missing) : STORE_ERROR;
    int64_t waiting = 0, cancel_dep = 0;
    for (size_t i = 0; i < n && r == STORE_OK; i++) {
        enum depend_effect e = depend_effect(status[i], mode);
        settled[i] = e != DEPEND_WAIT;
        waiting += e == DEPEND_WAIT;
        if (e == DEPEND_CANCEL && cancel_dep == 0)
            cancel_dep = ids[i];
    }
    free(status);
    *plan = depend_plan(waiting, cancel_dep);
    return r;
}

/* A walk down the graph (depend.h) and what its visits need. */
struct walk {
    struct depend_walk q;
    int64_t now;
    struct store_news *notes;
    const char *queue; /* of the job the walk started from (NULL: the sweep's own walk) */
};

static int push(struct walk *w, int64_t id)
{
    if (depend_walk_push(&w->q, id) == 0)
        return 0;
    log_error("out of memory walking dependents");
    return -1;
}

/* The modes whose dependents a dependency in status s cancels (want DEPEND_CANCEL) or settles
 * (DEPEND_SETTLE), as a smallint[] literal (depend_effect decides). */
static void modes_literal(enum job_status s, enum depend_effect want, char *buf, size_t len)
{
    unsigned modes = depend_modes(s, want);
    size_t at = (size_t)snprintf(buf, len, "{");
    for (int m = 0; m < DEP_MODE_COUNT; m++) {
        if (modes & (1u << m))
            at += (size_t)snprintf(buf + at, len - at, at > 1 ? ",%d" : "%d", m);
    }
    snprintf(buf + at, len - at, "}");
}

/* Lock the dependents of job id in id order, and read its status into *s (JOB_STATUS_NONE:
 * gone). Every visit takes these locks before it reads a dependent or the other dependencies
 * of one (READ COMMITTED: each later statement reads a later snapshot), so two transactions
 * that change two dependencies of one job in two processes re-evaluate it one after the
 * other, the second one seeing what the first committed. */
static enum store_result lock_dependents(struct pg_conn *c, int64_t id, enum job_status *s)
{
    char idb[24];
    const char *p[1] = {pg_int_param(idb, id)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_DEP_VISIT, 1, p, "dependents' locks", &r);
    if (!res)
        return r;
    int known = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0);
    *s = known ? (enum job_status)pg_row_int(res, 0, 0) : JOB_STATUS_NONE;
    PQclear(res);
    return STORE_OK;
}

/* Purged job id counts as ended in s, and never comes back: the dependents that s cancels
 * and another dependency cancelled first name it from now on (depend.h), so that a retry of
 * that one leaves them cancelled. */
static enum store_result pin(struct pg_conn *c, int64_t id, enum job_status s)
{
    if (depend_modes(s, DEPEND_CANCEL) == 0)
        return STORE_OK;
    char idb[24], cancel[32], detail[DEPEND_DETAIL_MAX];
    modes_literal(s, DEPEND_CANCEL, cancel, sizeof cancel);
    const char *p[4] = {pg_int_param(idb, id), depend_detail(id, detail), DEPEND_FAILED_CODE,
                        cancel};
    return run(c, PG_DEP_PIN, 4, p, "dependents of a purged job");
}

/* Job id has ended in status s: settle its edges, cancel or release its blocked dependents. */
static enum store_result visit_ended(struct pg_conn *c, struct walk *w, int64_t id,
                                     enum job_status s)
{
    char idb[24], now[24], cancel[32], settle[32], detail[DEPEND_DETAIL_MAX];
    modes_literal(s, DEPEND_CANCEL, cancel, sizeof cancel);
    modes_literal(s, DEPEND_SETTLE, settle, sizeof settle);
    const char *p[6] = {pg_int_param(idb, id),     pg_int_param(now, w->now), cancel, settle,
                        depend_detail(id, detail), DEPEND_FAILED_CODE};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_DEP_SETTLE, 6, p, "dependents of an end", &r);
    if (!res)
        return r;
    r = STORE_OK;
    for (int i = 0; i < PQntuples(res) && r == STORE_OK; i++) {
        int cancelled = PQgetvalue(res, i, 0)[0] == 't';
        int flag = PQgetvalue(res, i, 2)[0] == 't';
        const char *queue = PQgetvalue(res, i, 3);
        if (cancelled && flag && push(w, pg_row_int(res, i, 1)) != 0)
            r = STORE_ERROR;
        else if (!cancelled && flag && pg_row_int(res, i, 4) <= w->now)
            store_news_ready(w->notes, queue, 0);
        else if (!cancelled && flag)
            store_news_later(w->notes, queue, pg_row_int(res, i, 4));
    }
    PQclear(res);
    return r;
}

/* Job dep came back (retried): dependent id, cancelled because of it, is looked at again from
 * its dependencies; pushed when it waits again and has dependents of its own. */
static enum store_result reevaluate(struct pg_conn *c, struct walk *w, int64_t id)
{
    char idb[24];
    const char *p[1] = {pg_int_param(idb, id)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_DEP_PARENTS, 1, p, "dependencies", &r);
    if (!res)
        return r;
    struct job j;
    r = pg_get_on(c, id, 0, &j);
    if (r != STORE_OK) {
        PQclear(res);
        return r == STORE_NOT_FOUND ? STORE_OK : r;
    }
    struct pg_arr deps = {0}, flags = {0};
    int64_t waiting = 0, cancel_dep = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        int64_t dep = pg_row_int(res, i, 0);
        /* A dependency deleted since (retention keeps only ended jobs) counts as settled. */
        enum job_status s =
            PQgetisnull(res, i, 1) ? JOB_SUCCEEDED : (enum job_status)pg_row_int(res, i, 1);
        enum depend_effect e = depend_effect(s, j.on_dependency_failure);
        waiting += e == DEPEND_WAIT;
        if (e == DEPEND_CANCEL && cancel_dep == 0)
            cancel_dep = dep;
        pg_arr_int(&deps, dep);
        pg_arr_bool(&flags, e != DEPEND_WAIT);
    }
    PQclear(res);
    job_clear(&j);
    char *d = pg_arr_take(&deps), *f = pg_arr_take(&flags);
    r = d && f ? STORE_OK : STORE_ERROR;
    if (r == STORE_OK) {
        const char *e[3] = {idb, d, f};
        r = run(c, PG_DEP_EDGES_SET, 3, e, "edges");
    }
    free(d);
    free(f);
    if (r != STORE_OK)
        return r;
    struct depend_plan plan = depend_plan(waiting, cancel_dep);
    char detail[DEPEND_DETAIL_MAX], pending[24];
    if (plan.status == JOB_CANCELLED) { /* still cancelled: by the one that failed now */
        const char *dp[2] = {idb, depend_detail(cancel_dep, detail)};
        return run(c, PG_DEP_DETAIL, 2, dp, "dependency detail");
    }
    const char *bp[2] = {idb, pg_int_param(pending, plan.pending)};
    res = pg_conn_exec(c, PG_DEP_BLOCK, 2, bp, "re-block", &r);
    if (!res)
        return r;
    if (PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't' && push(w, id) != 0)
        r = STORE_ERROR;
    PQclear(res);
    return r;
}

/* Job id came back: its settled edges unsettle, its dependents cancelled because of it are
 * re-evaluated. */
static enum store_result visit_open(struct pg_conn *c, struct walk *w, int64_t id)
{
    char idb[24], detail[DEPEND_DETAIL_MAX];
    const char *p[3] = {pg_int_param(idb, id), DEPEND_FAILED_CODE, depend_detail(id, detail)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_DEP_UNSETTLE, 3, p, "dependents of a retry", &r);
    if (!res)
        return r;
    int n = PQntuples(res);
    int64_t *kids = malloc((size_t)(n ? n : 1) * sizeof *kids);
    for (int i = 0; kids && i < n; i++)
        kids[i] = pg_row_int(res, i, 0);
    PQclear(res);
    if (!kids)
        return STORE_ERROR;
    r = STORE_OK;
    for (int i = 0; i < n && r == STORE_OK; i++)
        r = reevaluate(c, w, kids[i]);
    free(kids);
    return r;
}

static enum store_result visit(struct pg_conn *c, struct walk *w, int64_t id)
{
    enum job_status s = JOB_STATUS_NONE;
    enum store_result r = lock_dependents(c, id, &s);
    if (r != STORE_OK || s == JOB_STATUS_NONE)
        return r;
    if (s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED)
        return visit_ended(c, w, id, s);
    return visit_open(c, w, id);
}

/* Visit w's jobs while its budget lasts; mark the rest for the sweep. */
static enum store_result walk_run(struct pg_conn *c, struct walk *w)
{
    enum store_result r = STORE_OK;
    int64_t id;
    while (r == STORE_OK && depend_walk_next(&w->q, &id))
        r = visit(c, w, id);
    if (r == STORE_OK && w->q.head < w->q.n) {
        char *lit = ids_literal(w->q.ids + w->q.head, w->q.n - w->q.head);
        const char *p[2] = {lit, "true"};
        r = lit ? run(c, PG_DEP_TODO, 2, p, "dependents later") : STORE_ERROR;
        free(lit);
        if (r == STORE_OK && w->queue)
            store_news_later(w->notes, w->queue, w->now); /* wakes the sweeper */
    }
    depend_walk_clear(&w->q);
    return r;
}

enum store_result pg_deps_moved(struct pg_conn *c, int64_t id, const char *queue,
                                int has_dependents, int64_t now, struct store_news *notes)
{
    if (!has_dependents)
        return STORE_OK;
    struct walk w = {.q = {.budget = DEPEND_STEP_MAX}, .now = now, .notes = notes, .queue = queue};
    if (push(&w, id) != 0)
        return STORE_ERROR;
    return walk_run(c, &w);
}

enum store_result pg_deps_purged(struct pg_conn *c, const int64_t *ids, const enum job_status *ends,
                                 size_t n, const char *queue, int64_t now, struct store_news *notes)
{
    struct walk w = {.q = {.budget = DEPEND_STEP_MAX}, .now = now, .notes = notes, .queue = queue};
    enum store_result r = STORE_OK;
    for (size_t i = 0; r == STORE_OK && i < n; i++) {
        w.q.visited++; /* each one of the walk's steps, though gone: visited here, not later */
        enum job_status gone;
        r = lock_dependents(c, ids[i], &gone);
        if (r == STORE_OK)
            r = visit_ended(c, &w, ids[i], ends[i]);
        if (r == STORE_OK)
            r = pin(c, ids[i], ends[i]);
    }
    if (r == STORE_OK)
        return walk_run(c, &w);
    depend_walk_clear(&w.q);
    return r;
}

enum store_result pg_deps_deleted(struct pg_conn *c, const PGresult *res, const char *queue,
                                  int64_t now, struct store_news *notes)
{
    int rows = PQntuples(res);
    int64_t *ids = malloc((size_t)(rows ? rows : 1) * sizeof *ids);
    enum job_status *ends = malloc((size_t)(rows ? rows : 1) * sizeof *ends);
    size_t n = 0;
    for (int i = 0; ids && ends && i < rows; i++) {
        enum job_status end =
            depend_purged((enum job_status)pg_row_int(res, i, 1), PQgetvalue(res, i, 3)[0] == 't');
        if (PQgetvalue(res, i, 2)[0] == 't' && end != JOB_STATUS_NONE) {
            ids[n] = pg_row_int(res, i, 0);
            ends[n++] = end;
        }
    }
    if (!ids || !ends)
        log_error("out of memory settling the dependents of %d deleted jobs", rows);
    enum store_result r =
        ids && ends ? pg_deps_purged(c, ids, ends, n, queue, now, notes) : STORE_ERROR;
    free(ids);
    free(ends);
    return r;
}

enum store_result pg_deps_retried(struct pg_conn *c, struct job *j, int *blocked)
{
    *blocked = 0;
    if (!j->depends_on)
        return STORE_OK;
    char idb[24];
    const char *p[1] = {pg_int_param(idb, j->id)};
    struct job b;
    enum store_result r = pg_one_row(c, PG_DEP_RETRIED, 1, p, 0, "retry: dependencies", &b);
    if (r == STORE_NOT_FOUND)
        return STORE_OK; /* none waits: queued */
    if (r != STORE_OK)
        return r;
    job_clear(j);
    *j = b;
    *blocked = 1;
    return STORE_OK;
}

enum store_result pg_deps_sweep(struct pg_conn *c, int64_t now, int batch, int *visited,
                                struct store_news *notes)
{
    *visited = 0;
    char lim[24];
    const char *p[1] = {pg_int_param(lim, batch)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_DEP_TODO_PICK, 1, p, "sweep dependents", &r);
    if (!res)
        return r;
    struct walk w = {.q = {.budget = batch}, .now = now, .notes = notes};
    int n = PQntuples(res);
    r = STORE_OK;
    for (int i = 0; i < n && r == STORE_OK; i++)
        if (push(&w, pg_row_int(res, i, 0)) != 0)
            r = STORE_ERROR;
    PQclear(res);
    if (r == STORE_OK && n > 0) {
        char *lit = ids_literal(w.q.ids, w.q.n);
        const char *q[2] = {lit, "false"};
        r = lit ? run(c, PG_DEP_TODO, 2, q, "dependents visited") : STORE_ERROR;
        free(lit);
    }
    if (r == STORE_OK)
        r = walk_run(c, &w);
    else
        depend_walk_clear(&w.q);
    *visited = w.q.visited;
    return r;
}
