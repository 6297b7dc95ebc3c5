/* Workflows on SQLite (sqlite_deps.h): the rules are depend.h's; this file stores and selects. */
#include "sqlite_deps.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_lanes.h"
#include "sqlite_row.h"
#include "sqlite_stmt.h"

/* Step st (bound with result rc) to its end, reading the first column of each row into
 * ids (when not NULL; grown as needed, *n of them), and reset it. */
static enum store_result rows(struct sqlite_conn *c, sqlite3_stmt *st, int rc, const char *what,
                              int64_t **ids, size_t *n)
{
    size_t cap = 0;
    if (ids) {
        *ids = NULL;
        *n = 0;
    }
    enum store_result r = STORE_OK;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        rc = sqlite_conn_step(c, st);
        if (rc != SQLITE_ROW || !ids)
            continue;
        if (*n == cap) {
            size_t want = cap ? cap * 2 : 16;
            int64_t *grown = realloc(*ids, want * sizeof *grown);
            if (!grown) {
                log_error("out of memory reading %s", what);
                r = STORE_ERROR;
                break;
            }
            *ids = grown;
            cap = want;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, what);
    sqlite3_reset(st);
    if (r != STORE_OK && ids) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return r;
}

enum store_result sqlite_deps_plan(struct sqlite_conn *c, const int64_t *ids, size_t n,
                                   enum dep_mode mode, unsigned char *settled,
                                   struct depend_plan *plan, int64_t *missing)
{
    int64_t waiting = 0, cancel_dep = 0;
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_MARK);
        int rc = sqlite_conn_bindf(st, "i", ids[i]);
        if (rc == SQLITE_OK)
            rc = sqlite_conn_step(c, st);
        int status = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
        if (rc == SQLITE_ROW)
            rc = sqlite_conn_step(c, st);
        if (rc != SQLITE_DONE) {
            enum store_result r = sqlite_conn_fail(c, rc, "dependency");
            sqlite3_reset(st);
            return r;
        }
        sqlite3_reset(st);
        if (status < 0) {
            *missing = ids[i];
            return STORE_NOT_FOUND;
        }
        enum depend_effect e = depend_effect((enum job_status)status, mode);
        settled[i] = e != DEPEND_WAIT;
        waiting += e == DEPEND_WAIT;
        if (e == DEPEND_CANCEL && cancel_dep == 0)
            cancel_dep = ids[i];
    }
    *plan = depend_plan(waiting, cancel_dep);
    return STORE_OK;
}

enum store_result sqlite_deps_record(struct sqlite_conn *c, int64_t id, const int64_t *ids,
                                     size_t n, const unsigned char *settled, const char *text,
                                     enum dep_mode mode, const struct depend_plan *plan,
                                     int64_t now)
{
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_EDGE);
        enum store_result r =
            sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "iii", ids[i], id, (int64_t)settled[i]),
                               "dependency edge");
        if (r != STORE_OK)
            return r;
    }
    char detail[DEPEND_DETAIL_MAX];
    int cancelled = plan->status == JOB_CANCELLED;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_JOB_SET);
    int rc = sqlite_conn_bindf(st, "itiitj", id, text, (int64_t)mode, plan->pending,
                               cancelled ? DEPEND_FAILED_CODE : NULL,
                               cancelled ? depend_detail(plan->cancel_dep, detail) : NULL);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 7, cancelled ? now : JOB_NONE);
    return sqlite_conn_finish(c, st, rc, "dependent's columns");
}

/* A blocked job j is released: queued at depend_release_run_at (scheduled when later). */
static enum store_result release(struct sqlite_conn *c, struct job *j, int64_t now,
                                 struct sqlite_notes *notes)
{
    int64_t run_at = depend_release_run_at(j->run_at, now);
    int stored = run_at > now ? SQLITE_SCHEDULED : JOB_QUEUED;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_RELEASE);
    enum store_result r = sqlite_conn_finish(
        c, st, sqlite_conn_bindf(st, "iii", j->id, (int64_t)stored, run_at), "release");
    if (r == STORE_OK &&
        sqlite_notes_move(notes, j->id, j->queue, JOB_BLOCKED, stored, ATTEMPT_RUNNING) != 0)
        r = STORE_ERROR;
    if (r != STORE_OK)
        return r;
    j->run_at = run_at;
    if (stored == SQLITE_SCHEDULED) {
        store_news_later(&notes->news, j->queue, run_at);
        return STORE_OK;
    }
    store_news_ready(&notes->news, j->queue, sqlite_row_plain(j));
    return sqlite_lane_requeued(c, j);
}

/* A blocked job j is cancelled because of dependency dep. */
static enum store_result cancel(struct sqlite_conn *c, const struct job *j, int64_t dep,
                                int64_t now, struct sqlite_notes *notes)
{
    char detail[DEPEND_DETAIL_MAX];
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_CANCEL);
    enum store_result r = sqlite_conn_finish(
        c, st,
        sqlite_conn_bindf(st, "iitj", j->id, now, DEPEND_FAILED_CODE, depend_detail(dep, detail)),
        "dependency cancel");
    if (r == STORE_OK &&
        sqlite_notes_move(notes, j->id, j->queue, JOB_BLOCKED, JOB_CANCELLED, ATTEMPT_RUNNING) != 0)
        r = STORE_ERROR;
    return r;
}

/* A walk down the graph (depend.h) and what its visits need. */
struct walk {
    struct depend_walk q;
    int64_t now;
    struct sqlite_notes *notes;
};

static int push(struct walk *w, int64_t id)
{
    if (depend_walk_push(&w->q, id) == 0)
        return 0;
    log_error("out of memory walking dependents");
    return -1;
}

/* The pending count of blocked job id moves by delta; *left is what remains. */
static enum store_result pending_add(struct sqlite_conn *c, int64_t id, int64_t delta,
                                     int64_t *left)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_PENDING);
    int rc = sqlite_conn_bindf(st, "ii", id, delta);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    *left = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    if (rc == SQLITE_ROW)
        rc = sqlite_conn_step(c, st);
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "pending");
    sqlite3_reset(st);
    return r;
}

/* Job j (cancelled because of a dependency that came back) is looked at again from its
 * dependencies: blocked while one has not ended, or cancelled by another that failed.
 * *reblocked is 1 when it is blocked again. */
static enum store_result reevaluate(struct sqlite_conn *c, struct job *j, int64_t now,
                                    int *reblocked, struct sqlite_notes *notes)
{
    *reblocked = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_PARENTS);
    int rc = sqlite_conn_bindf(st, "i", j->id);
    int64_t waiting = 0, cancel_dep = 0;
    int64_t *deps = NULL;
    unsigned char *flags = NULL;
    size_t n = 0, cap = 0;
    enum store_result r = STORE_OK;
    while ((rc == SQLITE_OK || rc == SQLITE_ROW) && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        int64_t dep = sqlite3_column_int64(st, 0);
        /* A dependency deleted since (retention keeps only ended jobs) counts as settled. */
        enum job_status s = sqlite3_column_type(st, 1) == SQLITE_NULL
                                ? JOB_SUCCEEDED
                                : (enum job_status)sqlite3_column_int(st, 1);
        enum depend_effect e = depend_effect(s, j->on_dependency_failure);
        waiting += e == DEPEND_WAIT;
        if (e == DEPEND_CANCEL && cancel_dep == 0)
            cancel_dep = dep;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *d2 = realloc(deps, cap * sizeof *d2);
            unsigned char *f2 = d2 ? realloc(flags, cap) : NULL;
            if (d2)
                deps = d2;
            if (!d2 || !f2) {
                log_error("out of memory re-evaluating job %lld", (long long)j->id);
                r = STORE_ERROR;
                break;
            }
            flags = f2;
        }
        deps[n] = dep;
        flags[n++] = e != DEPEND_WAIT;
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "dependencies");
    sqlite3_reset(st);
    for (size_t i = 0; r == STORE_OK && i < n; i++) {
        st = sqlite_conn_stmt(c, STMT_DEP_EDGE_SET);
        r = sqlite_conn_finish(
            c, st, sqlite_conn_bindf(st, "iii", deps[i], j->id, (int64_t)flags[i]), "edge");
    }
    free(deps);
    free(flags);
    if (r != STORE_OK)
        return r;
    struct depend_plan plan = depend_plan(waiting, cancel_dep);
    char detail[DEPEND_DETAIL_MAX];
    if (plan.status == JOB_CANCELLED) { /* still cancelled: by the one that failed now */
        st = sqlite_conn_stmt(c, STMT_DEP_DETAIL);
        return sqlite_conn_finish(
            c, st, sqlite_conn_bindf(st, "ij", j->id, depend_detail(cancel_dep, detail)),
            "dependency detail");
    }
    st = sqlite_conn_stmt(c, STMT_DEP_BLOCK);
    r = sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "ii", j->id, plan.pending), "re-block");
    if (r == STORE_OK &&
        sqlite_notes_move(notes, j->id, j->queue, JOB_CANCELLED, JOB_BLOCKED, ATTEMPT_RUNNING) != 0)
        r = STORE_ERROR;
    if (r == STORE_OK && plan.status == JOB_QUEUED) { /* cannot happen: one came back */
        j->status = JOB_BLOCKED;
        return release(c, j, now, notes);
    }
    *reblocked = r == STORE_OK;
    return r;
}

/* Dependent id of job dep, which is in status s now: what depend.h says. */
static enum store_result reach(struct sqlite_conn *c, struct walk *w, int64_t dep,
                               enum job_status s, int64_t id)
{
    struct job j;
    enum store_result r = sqlite_row_get(c, id, 0, &j);
    if (r == STORE_NOT_FOUND)
        return STORE_OK; /* deleted (purged) */
    if (r != STORE_OK)
        return r;
    int final = s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
    int64_t left = 0;
    if (final && j.status == JOB_BLOCKED) {
        if (depend_effect(s, j.on_dependency_failure) == DEPEND_CANCEL) {
            r = cancel(c, &j, dep, w->now, w->notes);
            if (r == STORE_OK && j.has_dependents && push(w, id) != 0)
                r = STORE_ERROR;
        } else if ((r = pending_add(c, id, -1, &left)) == STORE_OK && left == 0) {
            r = release(c, &j, w->now, w->notes);
        }
    } else if (!final && j.status == JOB_BLOCKED) {
        r = pending_add(c, id, 1, &left);
    } else if (!final && j.status == JOB_CANCELLED &&
               depend_cancelled_by(j.error_code, j.error_detail, dep)) {
        int reblocked = 0;
        r = reevaluate(c, &j, w->now, &reblocked, w->notes);
        if (r == STORE_OK && reblocked && j.has_dependents && push(w, id) != 0)
            r = STORE_ERROR;
    }
    job_clear(&j);
    return r;
}

/* Visit job id as a job in status s: settle its unsettled edges when s has ended, else
 * unsettle its settled ones, and reach each dependent so found. */
static enum store_result visit_as(struct sqlite_conn *c, struct walk *w, int64_t id,
                                  enum job_status s)
{
    int final = s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
    enum stmt_id which = final ? STMT_DEP_SETTLE : STMT_DEP_UNSETTLE;
    sqlite3_stmt *st = sqlite_conn_stmt(c, which);
    int64_t *kids = NULL;
    size_t n = 0;
    enum store_result r = rows(c, st, sqlite_conn_bindf(st, "i", id), "dependents", &kids, &n);
    for (size_t i = 0; r == STORE_OK && i < n; i++)
        r = reach(c, w, id, s, kids[i]);
    free(kids);
    return r;
}

/* Visit job id in the status it has now. */
static enum store_result visit(struct sqlite_conn *c, struct walk *w, int64_t id)
{
    struct job p;
    enum store_result r = sqlite_row_get(c, id, 0, &p);
    if (r == STORE_NOT_FOUND)
        return STORE_OK;
    if (r != STORE_OK)
        return r;
    enum job_status s = p.status;
    job_clear(&p);
    return visit_as(c, w, id, s);
}

/* Visit w's jobs while its budget lasts; mark the rest for the sweep. */
static enum store_result walk_run(struct sqlite_conn *c, struct walk *w, const char *queue)
{
    enum store_result r = STORE_OK;
    int64_t id;
    while (r == STORE_OK && depend_walk_next(&w->q, &id))
        r = visit(c, w, id);
    for (size_t i = w->q.head; r == STORE_OK && i < w->q.n; i++) {
        sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_TODO_MARK);
        r = sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "ii", w->q.ids[i], (int64_t)1),
                               "dependents later");
        if (r == STORE_OK && queue)
            store_news_later(&w->notes->news, queue, w->now); /* wakes the sweeper */
    }
    depend_walk_clear(&w->q);
    return r;
}

enum store_result sqlite_deps_moved(struct sqlite_conn *c, const struct job *j, int64_t now,
                                    struct sqlite_notes *notes)
{
    if (!j->has_dependents)
        return STORE_OK;
    struct walk w = {.q = {.budget = DEPEND_STEP_MAX}, .now = now, .notes = notes};
    if (push(&w, j->id) != 0)
        return STORE_ERROR;
    return walk_run(c, &w, j->queue);
}

/* Purged job id counts as ended in s, and never comes back: the dependents that s cancels
 * and another dependency cancelled first name it from now on (depend.h), so that a retry of
 * that one leaves them cancelled. */
static enum store_result pin(struct sqlite_conn *c, int64_t id, enum job_status s)
{
    unsigned modes = depend_modes(s, DEPEND_CANCEL);
    if (modes == 0)
        return STORE_OK;
    char detail[DEPEND_DETAIL_MAX];
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_PIN);
    return sqlite_conn_finish(c, st,
                              sqlite_conn_bindf(st, "ijti", id, depend_detail(id, detail),
                                                DEPEND_FAILED_CODE, (int64_t)modes),
                              "dependents of a purged job");
}

enum store_result sqlite_deps_purged(struct sqlite_conn *c, const int64_t *ids,
                                     const enum job_status *ends, size_t n, const char *queue,
                                     int64_t now, struct sqlite_notes *notes)
{
    struct walk w = {.q = {.budget = DEPEND_STEP_MAX}, .now = now, .notes = notes};
    enum store_result r = STORE_OK;
    for (size_t i = 0; r == STORE_OK && i < n; i++) {
        w.q.visited++; /* each one of the walk's steps, though gone: visited here, not later */
        r = visit_as(c, &w, ids[i], ends[i]);
        if (r == STORE_OK)
            r = pin(c, ids[i], ends[i]);
    }
    if (r == STORE_OK)
        return walk_run(c, &w, queue);
    depend_walk_clear(&w.q);
    return r;
}

enum store_result sqlite_deps_deleted(struct sqlite_conn *c, sqlite3_stmt *st, size_t max,
                                      const char *queue, int64_t now, struct sqlite_notes *notes,
                                      size_t *deleted)
{
    *deleted = 0;
    int64_t *ids = malloc((max > 0 ? max : 1) * sizeof *ids);
    enum job_status *ends = malloc((max > 0 ? max : 1) * sizeof *ends);
    size_t n = 0, rows = 0;
    int rc = ids && ends ? SQLITE_OK : SQLITE_NOMEM;
    while (rc == SQLITE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        enum job_status end =
            depend_purged((enum job_status)sqlite3_column_int(st, 1), sqlite3_column_int(st, 3));
        if (sqlite3_column_int(st, 2) && end != JOB_STATUS_NONE && n < max) {
            ids[n] = sqlite3_column_int64(st, 0);
            ends[n++] = end;
        }
        rows++;
        rc = SQLITE_OK;
    }
    sqlite3_reset(st);
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "delete");
    else if (n > 0)
        r = sqlite_deps_purged(c, ids, ends, n, queue, now, notes);
    free(ids);
    free(ends);
    if (r == STORE_OK)
        *deleted = rows;
    return r;
}

enum store_result sqlite_deps_retried(struct sqlite_conn *c, struct job *j, int *blocked)
{
    *blocked = 0;
    if (!j->depends_on)
        return STORE_OK;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_WAITING);
    int rc = sqlite_conn_bindf(st, "i", j->id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    int64_t waiting = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc == SQLITE_ROW)
        rc = sqlite_conn_step(c, st);
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "waiting");
    sqlite3_reset(st);
    if (r == STORE_OK) { /* its edges settled as they are now */
        st = sqlite_conn_stmt(c, STMT_DEP_EDGES_RESET);
        r = sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "i", j->id), "edges of a retried job");
    }
    if (r != STORE_OK || waiting == 0)
        return r;
    st = sqlite_conn_stmt(c, STMT_DEP_BLOCK);
    r = sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "ii", j->id, waiting), "retry blocked");
    if (r == STORE_OK) {
        j->status = JOB_BLOCKED;
        *blocked = 1;
    }
    return r;
}

enum store_result sqlite_deps_sweep(struct sqlite_conn *c, int64_t now, int batch, int *visited,
                                    struct sqlite_notes *notes)
{
    *visited = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEP_TODO_PICK);
    int64_t *ids = NULL;
    size_t n = 0;
    enum store_result r =
        rows(c, st, sqlite_conn_bindf(st, "i", (int64_t)batch), "dependents to visit", &ids, &n);
    struct walk w = {.q = {.budget = batch}, .now = now, .notes = notes};
    for (size_t i = 0; r == STORE_OK && i < n; i++) {
        st = sqlite_conn_stmt(c, STMT_DEP_TODO_MARK);
        r = sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "ii", ids[i], (int64_t)0),
                               "dependents visited");
        if (r == STORE_OK && push(&w, ids[i]) != 0)
            r = STORE_ERROR;
    }
    free(ids);
    if (r == STORE_OK)
        r = walk_run(c, &w, NULL);
    else
        depend_walk_clear(&w.q);
    *visited = w.q.visited;
    return r;
}
