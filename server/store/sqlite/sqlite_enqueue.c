/* store_enqueue for SQLite: n jobs in one transaction, idempotency keys and dedup keys
 * honoured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "depend.h"
#include "log.h"
#include "sqlite_deps.h"
#include "sqlite_lanes.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

struct enqueue_arg {
    const struct job_spec *specs;
    size_t n;
    int64_t now;
    struct job *out;
    int *created;
    struct sqlite_notes *notes;
    size_t *missing_spec; /* an unknown dependency: the spec, and its id */
    int64_t *missing_id;
};

static int bind_spec(sqlite3_stmt *st, const struct job_spec *sp, int status, int64_t now,
                     int64_t lane)
{
    /* An empty requires is NULL, so the job sits in the no-requirements index. */
    const char *requires = sp->requires;
    int rc = sqlite_conn_bind_text(st, 1, sp->queue);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, status);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 3, sp->payload ? sp->payload : "null");
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, sp->priority);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 5, sp->run_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 6, sp->max_attempts);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 7, sp->max_runtime_seconds);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 8, requires);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 9, sp->idempotency_key);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 10, now);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 11, sp->concurrency_key);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 12, job_spec_expires_at(sp, now));
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 13, sp->dedup_key);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 14, sp->dedup_key ? sp->dedup_mode : JOB_NONE);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 15, job_spec_dedup_seconds(sp));
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 16, lane);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 17, sp->traceparent);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 18, sp->traceparent ? sp->tracestate : NULL);
    return rc;
}

/* The existing job of sp's idempotency_key into *out: STORE_OK, or STORE_NOT_FOUND. */
static enum store_result idempotency_find(struct sqlite_conn *c, const struct job_spec *sp,
                                          struct job *out)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_JOB_BY_KEY);
    int rc = sqlite_conn_bind_text(st, 1, sp->queue);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, sp->idempotency_key);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind job by key");
        sqlite3_reset(st);
        return r;
    }
    return sqlite_row_one(c, st, 0, "job by key", out);
}

/* The job that holds (queue, key) already: an insert of sp was ignored. */
static enum store_result existing(struct sqlite_conn *c, const struct job_spec *sp, struct job *out)
{
    enum store_result r = idempotency_find(c, sp, out);
    if (r == STORE_NOT_FOUND) {
        log_error("enqueue in %s: insert ignored but no job holds its idempotency key", sp->queue);
        r = STORE_ERROR;
    }
    return r;
}

static char *dup_or_null(const char *s, int *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    *bad |= !d;
    return d;
}

/* The job just inserted from sp, built from what was bound instead of read back: the row
 * holds exactly these values (a queued job not due yet shows as queued). Returns 0, or -1
 * when memory ran out (logged; out is left empty). */
static int inserted_job(const struct job_spec *sp, int status, int64_t id, int64_t now,
                        struct job *out)
{
    int bad = 0;
    *out = (struct job){.id = id,
                        .status = status == SQLITE_SCHEDULED ? JOB_QUEUED : (enum job_status)status,
                        .priority = sp->priority,
                        .run_at = sp->run_at,
                        .max_attempts = sp->max_attempts,
                        .max_runtime_seconds = sp->max_runtime_seconds,
                        .created_at = now,
                        .claimed_at = JOB_NONE,
                        .heartbeat_at = JOB_NONE,
                        .lease_expires_at = JOB_NONE,
                        .finished_at = JOB_NONE,
                        .expires_at = job_spec_expires_at(sp, now),
                        .dedup_mode = sp->dedup_key ? sp->dedup_mode : DEDUP_NONE,
                        .dedup_seconds = job_spec_dedup_seconds(sp)};
    out->queue = dup_or_null(sp->queue, &bad);
    out->payload = dup_or_null(sp->payload ? sp->payload : "null", &bad);
    out->requires = dup_or_null(sp->requires, &bad);
    out->idempotency_key = dup_or_null(sp->idempotency_key, &bad);
    out->concurrency_key = dup_or_null(sp->concurrency_key, &bad);
    out->dedup_key = dup_or_null(sp->dedup_key, &bad);
    out->traceparent = dup_or_null(sp->traceparent, &bad);
    out->tracestate = dup_or_null(sp->traceparent ? sp->tracestate : NULL, &bad);
    if (bad || !out->queue) {
        log_error("out of memory copying new job %lld", (long long)id);
        job_clear(out);
        return -1;
    }
    return 0;
}

/* Insert one job of sp in `status` (-1: queued, or scheduled when not due yet). */
static enum store_result insert_row(struct sqlite_conn *c, const struct job_spec *given, int forced,
                                    int64_t now, struct job *out, int *created,
                                    struct sqlite_notes *notes)
{
    struct job_spec spec = *given;
    spec.run_at = job_spec_run_at(given, now); /* a delay, on this store's clock */
    const struct job_spec *sp = &spec;
    int status = forced >= 0 ? forced : sp->run_at > now ? SQLITE_SCHEDULED : JOB_QUEUED;
    int64_t lane;
    enum store_result lr = sqlite_lane_of(c, sp, status == JOB_QUEUED, &lane);
    if (lr != STORE_OK)
        return lr;
    if (lane != JOB_NONE)
        notes->lanes = SQLITE_LANES_SOME;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_JOB_INSERT);
    int rc = bind_spec(st, sp, status, now, lane);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind job insert");
        sqlite3_reset(st);
        return r;
    }
    enum store_result r = sqlite_row_write(c, st, 0, 0, "job insert", NULL);
    if (r == STORE_NOT_FOUND && sp->idempotency_key) {
        *created = 0;
        return existing(c, sp, out);
    }
    if (r == STORE_NOT_FOUND) {
        log_error("enqueue in %s: insert without idempotency key changed no row", sp->queue);
        return STORE_ERROR;
    }
    if (r != STORE_OK)
        return r;
    if (inserted_job(sp, status, sqlite3_last_insert_rowid(c->db), now, out) != 0)
        return STORE_ERROR;
    *created = 1;
    if (sqlite_notes_move(notes, out->id, sp->queue, -1, status, ATTEMPT_RUNNING) != 0)
        return STORE_ERROR;
    if (status == SQLITE_SCHEDULED)
        store_news_later(&notes->news, sp->queue, sp->run_at);
    else if (status == JOB_QUEUED)
        store_news_ready(&notes->news, sp->queue, !sp->requires);
    return STORE_OK;
}

/* Insert one job of sp whose dependencies are ids[0..sp->ndeps) (depend.h; distinct): blocked,
 * queued or cancelled as its plan says, with its edges; an idempotency_key hit first reads the
 * existing job and writes nothing, whatever became of its dependencies (dedup_one does that
 * for a spec with a dedup key). STORE_NOT_FOUND with
 * *missing set when a dependency does not exist. */
static enum store_result insert_deps(struct sqlite_conn *c, const struct job_spec *sp,
                                     const int64_t *ids, int64_t now, struct job *out, int *created,
                                     struct sqlite_notes *notes, int64_t *missing)
{
    if (sp->idempotency_key && !sp->dedup_key) { /* dedup_one looked a dedup spec's key up */
        enum store_result hit = idempotency_find(c, sp, out);
        if (hit != STORE_NOT_FOUND)
            return hit; /* created stays 0 */
    }
    size_t n = sp->ndeps;
    unsigned char *settled = malloc(n ? n : 1);
    char *text = depend_ids_text(ids, n);
    enum store_result r = settled && text ? STORE_OK : STORE_ERROR;
    struct depend_plan plan = {0};
    if (r == STORE_OK)
        r = sqlite_deps_plan(c, ids, n, sp->on_dependency_failure, settled, &plan, missing);
    if (r == STORE_OK)
        r = insert_row(c, sp, plan.status == JOB_QUEUED ? -1 : (int)plan.status, now, out, created,
                       notes);
    if (r == STORE_OK && *created) {
        int64_t id = out->id;
        r = sqlite_deps_record(c, id, ids, n, settled, text, sp->on_dependency_failure, &plan, now);
        job_clear(out);
        if (r == STORE_OK)
            r = sqlite_row_get(c, id, 0, out);
    }
    free(settled);
    free(text);
    return r;
}

/* Insert one job of sp (ids: its dependencies, NULL when it has none). */
static enum store_result insert_one(struct sqlite_conn *c, const struct job_spec *sp,
                                    const int64_t *ids, int64_t now, struct job *out, int *created,
                                    struct sqlite_notes *notes, int64_t *missing)
{
    if (ids)
        return insert_deps(c, sp, ids, now, out, created, notes, missing);
    return insert_row(c, sp, -1, now, out, created, notes);
}

/* Dedup (dedup.h). Everything below runs in the enqueue transaction on the one writer: no
 * other write comes between the lookup of a key and the insert or update that follows it, and
 * an element of a batch sees the jobs its earlier elements created or replaced. */

/* The lookup of each mode: the job dedup_decide is given (sqlite_stmt.c says which). */
static const enum stmt_id dedup_find_stmt[DEDUP_MODE_COUNT] = {
    [DEDUP_ACTIVE] = STMT_DEDUP_ACTIVE,
    [DEDUP_WINDOW] = STMT_DEDUP_WINDOW,
    [DEDUP_DEBOUNCE] = STMT_DEDUP_DEBOUNCE,
};

/* The job that the lookup of sp's dedup mode finds into *out (as read back: a scheduled job
 * shows as queued), and its stored status into *stored. STORE_NOT_FOUND when none. */
static enum store_result dedup_find(struct sqlite_conn *c, const struct job_spec *sp,
                                    struct job *out, int *stored)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, dedup_find_stmt[sp->dedup_mode]);
    int rc = sqlite_conn_bind_text(st, 1, sp->queue);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, sp->dedup_key);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    enum store_result r = STORE_NOT_FOUND;
    if (rc == SQLITE_ROW) {
        *stored = sqlite3_column_int(st, SQL_DEDUP_STORED_STATUS);
        r = sqlite_row_job(st, 0, out) == 0 ? STORE_OK : STORE_ERROR;
    } else if (rc != SQLITE_DONE) {
        r = sqlite_conn_fail(c, rc, "dedup lookup");
    }
    sqlite3_reset(st);
    return r;
}

/* Debounce: job j (found queued and never claimed, stored as `stored`) takes sp's payload and
 * is due at run_at: scheduled when that is later than now, else queued. j is updated to match
 * the row; the counts and the commit's news follow the move. */
static enum store_result dedup_replace(struct sqlite_conn *c, const struct job_spec *sp,
                                       int64_t run_at, int64_t now, int stored, struct job *j,
                                       struct sqlite_notes *notes)
{
    const char *payload = sp->payload ? sp->payload : "null";
    char *copy = strdup(payload);
    if (!copy) {
        log_error("out of memory replacing the payload of job %lld", (long long)j->id);
        return STORE_ERROR;
    }
    int status = run_at > now ? SQLITE_SCHEDULED : JOB_QUEUED;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_DEDUP_REPLACE);
    int rc = sqlite3_bind_int64(st, 1, j->id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, payload);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, run_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 4, status);
    enum store_result r = rc == SQLITE_OK ? sqlite_row_write(c, st, j->id, 0, "dedup replace", NULL)
                                          : sqlite_conn_fail(c, rc, "bind dedup replace");
    if (rc != SQLITE_OK)
        sqlite3_reset(st);
    if (r == STORE_NOT_FOUND) {
        log_error("dedup replace of job %lld in %s changed no row", (long long)j->id, sp->queue);
        r = STORE_ERROR;
    }
    if (r != STORE_OK || (stored != status && sqlite_notes_move(notes, j->id, j->queue, stored,
                                                                status, ATTEMPT_RUNNING) != 0)) {
        free(copy);
        return r != STORE_OK ? r : STORE_ERROR;
    }
    free(j->payload);
    j->payload = copy;
    j->run_at = run_at;
    if (status == SQLITE_SCHEDULED)
        store_news_later(&notes->news, j->queue, run_at);
    else
        store_news_ready(&notes->news, j->queue, sqlite_row_plain(j));
    /* Its lane looks at its head again (a job due now); a scheduled one: its promotion. */
    return status == JOB_QUEUED ? sqlite_lane_requeued(c, j) : STORE_OK;
}

/* Enqueue sp, which has a dedup key: an idempotency_key hit first (its job, as without dedup),
 * else what dedup_decide says of the job the lookup of its mode finds: create it (a debounce
 * due at now + seconds), answer the job found, or replace the job found. */
static enum store_result dedup_one(struct sqlite_conn *c, const struct job_spec *sp,
                                   const int64_t *ids, int64_t now, struct job *out, int *created,
                                   struct sqlite_notes *notes, int64_t *missing)
{
    enum store_result r = STORE_NOT_FOUND;
    if (sp->idempotency_key)
        r = idempotency_find(c, sp, out);
    if (r != STORE_NOT_FOUND)
        return r; /* a hit (created stays 0), or an error */
    struct job found = {0};
    int stored = 0;
    r = dedup_find(c, sp, &found, &stored);
    if (r != STORE_OK && r != STORE_NOT_FOUND)
        return r;
    struct dedup_plan plan = dedup_decide_spec(sp, r == STORE_OK ? &found : NULL, now);
    if (plan.action == DEDUP_CREATE) {
        job_clear(&found);
        struct job_spec spec = *sp;
        if (plan.run_at != JOB_NONE)
            spec.run_at = plan.run_at;
        return insert_one(c, &spec, ids, now, out, created, notes, missing);
    }
    if (plan.action == DEDUP_REPLACE_EXISTING) {
        r = dedup_replace(c, sp, plan.run_at, now, stored, &found, notes);
        if (r != STORE_OK) {
            job_clear(&found);
            return r;
        }
    }
    *out = found; /* created stays 0 */
    return STORE_OK;
}

/* The ids spec i depends on (its index entries are the jobs of earlier-inserted elements) into
 * ids (room for JOB_DEPS_MAX), each once (an id and a ref may name one job): how many, or -1
 * when out of memory. */
static long resolve(const struct enqueue_arg *a, size_t i, int64_t *ids)
{
    const struct job_spec *sp = &a->specs[i];
    for (size_t d = 0; d < sp->ndeps; d++)
        ids[d] = sp->deps[d].id > 0 ? sp->deps[d].id : a->out[sp->deps[d].index].id;
    return depend_unique(ids, sp->ndeps);
}

enum store_result sqlite_enqueue_one(struct sqlite_conn *c, const struct job_spec *sp, int64_t now,
                                     struct job *out, int *created, struct sqlite_notes *notes)
{
    int64_t missing = 0; /* a schedule's job has no dependencies */
    return sp->dedup_key ? dedup_one(c, sp, NULL, now, out, created, notes, &missing)
                         : insert_one(c, sp, NULL, now, out, created, notes, &missing);
}

static int enqueue_tx(struct sqlite_conn *c, void *p)
{
    struct enqueue_arg *a = p;
    memset(a->out, 0, a->n * sizeof *a->out);
    memset(a->created, 0, a->n * sizeof *a->created);
    /* Elements with dependencies go after the elements they name (depend_order). */
    int deps = 0;
    for (size_t i = 0; i < a->n && !deps; i++)
        deps = a->specs[i].ndeps > 0;
    size_t *order = deps ? malloc(a->n * sizeof *order) : NULL;
    int64_t *ids = deps ? malloc(JOB_DEPS_MAX * sizeof *ids) : NULL;
    if (deps && (!order || !ids || depend_order(a->specs, a->n, order) != -1)) {
        log_error("enqueue: the batch's dependencies cannot be ordered");
        free(order);
        free(ids);
        return STORE_ERROR;
    }
    enum store_result r = STORE_OK;
    for (size_t k = 0; k < a->n && r == STORE_OK; k++) {
        size_t i = order ? order[k] : k;
        const struct job_spec *sp = &a->specs[i];
        struct job_spec distinct;
        const int64_t *dep_ids = NULL;
        if (sp->ndeps > 0) {
            long n = resolve(a, i, ids);
            if (n < 0) {
                r = STORE_ERROR;
                break;
            }
            distinct = *sp; /* its dependencies are ids[0..n) from here on */
            distinct.ndeps = (size_t)n;
            sp = &distinct;
            dep_ids = ids;
        }
        *a->missing_id = 0;
        r = sp->dedup_key ? dedup_one(c, sp, dep_ids, a->now, &a->out[i], &a->created[i], a->notes,
                                      a->missing_id)
                          : insert_one(c, sp, dep_ids, a->now, &a->out[i], &a->created[i], a->notes,
                                       a->missing_id);
        if (r == STORE_NOT_FOUND)
            *a->missing_spec = i;
    }
    free(order);
    free(ids);
    if (r != STORE_OK)
        return r;
    return a->n == 1 && !a->created[0] ? STORE_EXISTS : STORE_OK;
}

static void enqueue_discard(void *p)
{
    struct enqueue_arg *a = p;
    for (size_t i = 0; i < a->n; i++)
        job_clear(&a->out[i]);
}

/* The enqueue transaction and its arguments, in one block. */
struct enqueue_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct enqueue_arg a;
};

struct sqlite_tx *sqlite_enqueue_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    const struct store_enqueue_call *e = &call->enqueue;
    if (e->n == 0) {
        call->result = STORE_OK;
        return NULL;
    }
    struct enqueue_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting an enqueue");
        call->result = STORE_ERROR;
        return NULL;
    }
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct enqueue_arg){e->specs,
                                e->n,
                                call->now,
                                e->out,
                                e->created,
                                &b->notes,
                                &call->enqueue.missing_spec,
                                &call->enqueue.missing_id};
    b->tx = (struct sqlite_tx){.name = "enqueue",
                               .fn = enqueue_tx,
                               .discard = enqueue_discard,
                               .arg = &b->a,
                               .notes = &b->notes,
                               .now = call->at_clock ? &b->a.now : NULL,
                               .weight = (int)e->n};
    return &b->tx;
}
