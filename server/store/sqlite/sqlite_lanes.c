/* Lanes and concurrency keys on SQLite (docs/flow-control.md): the lane of an enqueued job,
 * the bookkeeping when a job re-enters the queue or a keyed job stops running, and the
 * primitives of the claim (lane_claim.h) with their candidates. One writer: no locks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lane_claim.h"
#include "log.h"
#include "sqlite_lanes.h"
#include "sqlite_row.h"

/* 1 while a row loop may step again: bound (SQLITE_OK) or after a row. */
static int more(int rc)
{
    return rc == SQLITE_OK || rc == SQLITE_ROW;
}

/* Step a statement that returns one integer (0 when no row) into *v and reset it. */
static enum store_result one_int(struct sqlite_conn *c, sqlite3_stmt *st, int rc, const char *what,
                                 int64_t *v)
{
    *v = 0;
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        rc = SQLITE_DONE;
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, what);
    sqlite3_reset(st);
    return r;
}

enum store_result sqlite_lane_of(struct sqlite_conn *c, const struct job_spec *sp, int due,
                                 int64_t *lane)
{
    *lane = JOB_NONE;
    if (!sp->requires && !sp->concurrency_key)
        return STORE_OK;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LANE_UPSERT);
    int rc = sqlite_conn_bindf(st, "ttti", sp->queue, sp->requires ? sp->requires : "",
                               sp->concurrency_key ? sp->concurrency_key : "",
                               due ? (int64_t)0 : LIMIT_NEVER);
    return one_int(c, st, rc, "lane of a job", lane);
}

enum store_result sqlite_lanes_drop(struct sqlite_conn *c, int64_t *from, int batch, int *dropped)
{
    *dropped = 0;
    int64_t last = 0, seen = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LANES_WINDOW);
    int rc = sqlite_conn_bindf(st, "ii", *from, (int64_t)batch);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW) {
        last = sqlite3_column_int64(st, 0); /* NULL (no lane after *from): 0 */
        seen = sqlite3_column_int64(st, 1);
        rc = SQLITE_DONE;
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "lanes window");
    sqlite3_reset(st);
    if (r != STORE_OK || seen == 0) {
        *from = 0;
        return r;
    }
    st = sqlite_conn_stmt(c, STMT_LANES_DROP);
    r = sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "ii", *from, last), "lanes drop");
    if (r != STORE_OK)
        return r;
    *dropped = sqlite3_changes(c->db);
    *from = seen < batch ? 0 : last;
    return STORE_OK;
}

enum store_result sqlite_lanes_any(struct sqlite_conn *c, int *known)
{
    int64_t any = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LANES_ANY);
    enum store_result r = one_int(c, st, SQLITE_OK, "any lane", &any);
    *known = any ? SQLITE_LANES_SOME : SQLITE_LANES_NONE;
    return r;
}

enum store_result sqlite_lane_requeued(struct sqlite_conn *c, const struct job *j)
{
    if (!j->requires && !j->concurrency_key)
        return STORE_OK;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LANE_TOUCH_JOB);
    return sqlite_conn_finish(c, st, sqlite_conn_bindf(st, "i", j->id), "lane of a requeued job");
}

enum store_result sqlite_lane_promoted(struct sqlite_conn *c, int64_t lane)
{
    sqlite3_stmt *st =
        sqlite_conn_stmt(c, lane == JOB_NONE ? STMT_LANES_TOUCH_EMPTY : STMT_LANE_TOUCH);
    return sqlite_conn_finish(c, st,
                              lane == JOB_NONE ? SQLITE_OK : sqlite_conn_bindf(st, "i", lane),
                              "lane of a promoted job");
}

enum store_result sqlite_key_released(struct sqlite_conn *c, const struct job *j,
                                      struct sqlite_notes *notes)
{
    if (!j->concurrency_key)
        return STORE_OK;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_KEY_REOPEN);
    int rc = sqlite_conn_bindf(st, "t", j->concurrency_key);
    while (more(rc) && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        const char *queue = (const char *)sqlite3_column_text(st, 0);
        if (queue)
            store_news_ready(&notes->news, queue, sqlite3_column_int(st, 1));
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "key released");
    sqlite3_reset(st);
    return r;
}

/* The claim's side: the transaction's connection and what the claim needs. */
struct lanes_be {
    struct sqlite_conn *c;
    int64_t now;
    const struct sqlite_lanes_take *take;
    struct sqlite_notes *notes;
};

static enum store_result be_take(void *p, const struct lane_cand *c, struct job *out)
{
    struct lanes_be *b = p;
    return b->take->fn(b->c, b->take->arg, c->id, out);
}

static enum store_result be_head(void *p, struct lane_cand *cand)
{
    struct lanes_be *b = p;
    sqlite3_stmt *st = sqlite_conn_stmt(b->c, STMT_LANE_BEST);
    int rc = sqlite_conn_bindf(st, "ii", cand->lane, b->now);
    cand->id = 0;
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(b->c, st);
    if (rc == SQLITE_ROW) {
        cand->id = sqlite3_column_int64(st, 0);
        cand->priority = sqlite3_column_int64(st, 1);
        cand->run_at = sqlite3_column_int64(st, 2);
        rc = SQLITE_DONE;
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(b->c, rc, "lane head");
    sqlite3_reset(st);
    if (r != STORE_OK)
        return r;
    /* A queued job is due on SQLite (later ones are scheduled): promotion marks the lane. */
    st = sqlite_conn_stmt(b->c, STMT_LANE_HEAD);
    rc = cand->id ? sqlite_conn_bindf(st, "iiiii", cand->lane, cand->id, cand->priority,
                                      cand->run_at, (int64_t)LIMIT_NEVER)
                  : sqlite_conn_bindf(st, "innni", cand->lane, JOB_NONE, JOB_NONE, JOB_NONE,
                                      (int64_t)LIMIT_NEVER);
    return sqlite_conn_finish(b->c, st, rc, "lane head set");
}

/* The limits that may apply to k->key, resolved into k. */
static enum store_result key_limit(struct lanes_be *b, struct lane_key *k)
{
    char *keys = lane_limit_keys_json(k->key);
    if (!keys) {
        log_error("out of memory for the limit keys of a concurrency key");
        return STORE_ERROR;
    }
    size_t max = strlen(k->key) + 2, n = 0;
    struct limit *found = calloc(max, sizeof *found);
    sqlite3_stmt *st = sqlite_conn_stmt(b->c, STMT_KEY_LIMITS);
    int rc = found ? sqlite_conn_bindf(st, "t", keys) : SQLITE_NOMEM;
    while (more(rc) && (rc = sqlite_conn_step(b->c, st)) == SQLITE_ROW && n < max) {
        struct limit *l = &found[n++];
        const char *key = (const char *)sqlite3_column_text(st, 0);
        snprintf(l->key, sizeof l->key, "%s", key ? key : "");
        l->max_running = sqlite3_column_int64(st, 1);
        l->rate_jobs = sqlite3_column_int64(st, 2);
        l->rate_per_seconds = sqlite3_column_int64(st, 3);
    }
    enum store_result r = rc == SQLITE_DONE || rc == SQLITE_ROW
                              ? STORE_OK
                              : sqlite_conn_fail(b->c, rc, "limits of a key");
    sqlite3_reset(st);
    const struct limit *l = r == STORE_OK ? limit_resolve(k->key, found, n) : NULL;
    k->has_limit = l != NULL;
    if (l)
        k->limit = *l;
    free(found);
    free(keys);
    return r;
}

static enum store_result be_key_load(void *p, struct lane_key *k)
{
    struct lanes_be *b = p;
    enum store_result r = key_limit(b, k);
    sqlite3_stmt *st;
    if (r == STORE_OK) {
        st = sqlite_conn_stmt(b->c, STMT_KEY_RUNNING);
        r = one_int(b->c, st, sqlite_conn_bindf(st, "t", k->key), "running of a key", &k->running);
    }
    if (r == STORE_OK) {
        st = sqlite_conn_stmt(b->c, STMT_KEY_PAUSED);
        r = one_int(b->c, st, sqlite_conn_bindf(st, "t", k->key), "pause of a key",
                    &k->paused_until);
    }
    k->window = 0;
    if (r == STORE_OK && k->has_limit && k->limit.rate_jobs > 0) {
        int64_t newest = 0; /* NULL (no claim kept): 0, before any now */
        st = sqlite_conn_stmt(b->c, STMT_KEY_NEWEST);
        r = one_int(b->c, st, sqlite_conn_bindf(st, "t", k->key), "newest claim of a key", &newest);
        k->now = limit_claim_second(k->now, newest);
        int64_t from = limit_window_start(&k->limit, k->now);
        if (r == STORE_OK) {
            st = sqlite_conn_stmt(b->c, STMT_KEY_CLAIMS_PRUNE);
            r = sqlite_conn_finish(b->c, st, sqlite_conn_bindf(st, "ti", k->key, from),
                                   "window prune");
        }
        if (r == STORE_OK) {
            st = sqlite_conn_stmt(b->c, STMT_KEY_WINDOW);
            r = one_int(b->c, st, sqlite_conn_bindf(st, "ti", k->key, from), "window of a key",
                        &k->window);
        }
    }
    return r;
}

static enum store_result be_key_claimed(void *p, struct lane_key *k)
{
    struct lanes_be *b = p;
    if (!k->has_limit || k->limit.rate_jobs <= 0)
        return STORE_OK;
    sqlite3_stmt *st = sqlite_conn_stmt(b->c, STMT_KEY_CLAIMED);
    return sqlite_conn_finish(b->c, st, sqlite_conn_bindf(st, "tii", k->key, k->now, (int64_t)1),
                              "claim of a key");
}

static enum store_result be_key_window(void *p, const struct lane_key *k, int64_t from,
                                       struct limit_claims *rows, size_t cap, size_t *n)
{
    struct lanes_be *b = p;
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(b->c, STMT_KEY_WINDOW_ROWS);
    int rc = sqlite_conn_bindf(st, "ti", k->key, from);
    while (more(rc) && *n < cap && (rc = sqlite_conn_step(b->c, st)) == SQLITE_ROW) {
        rows[*n].at = sqlite3_column_int64(st, 0);
        rows[(*n)++].n = sqlite3_column_int64(st, 1);
    }
    enum store_result r = rc == SQLITE_DONE || rc == SQLITE_ROW
                              ? STORE_OK
                              : sqlite_conn_fail(b->c, rc, "window rows of a key");
    sqlite3_reset(st);
    return r;
}

static enum store_result be_key_close(void *p, const struct lane_key *k, int64_t at)
{
    struct lanes_be *b = p;
    enum store_result r;
    sqlite3_stmt *st = sqlite_conn_stmt(b->c, STMT_KEY_CLOSE);
    int rc = sqlite_conn_bindf(st, "ti", k->key, at);
    while (more(rc) && (rc = sqlite_conn_step(b->c, st)) == SQLITE_ROW) {
        const char *queue = (const char *)sqlite3_column_text(st, 0);
        if (queue && at != LIMIT_NEVER)
            store_news_later(&b->notes->news, queue, at);
    }
    r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(b->c, rc, "key close");
    sqlite3_reset(st);
    return r;
}

static const struct lane_claim_ops sqlite_lane_ops = {be_take,        be_head,       be_key_load,
                                                      be_key_claimed, be_key_window, be_key_close};

/* Look again at the heads of at most SQLITE_LANES_CHECK lanes of queue marked for it. */
static enum store_result refresh(struct lanes_be *b, const char *queue)
{
    int64_t ids[SQLITE_LANES_CHECK];
    size_t n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(b->c, STMT_LANES_DUE);
    int rc = sqlite_conn_bindf(st, "tii", queue, b->now, (int64_t)SQLITE_LANES_CHECK);
    while (more(rc) && (rc = sqlite_conn_step(b->c, st)) == SQLITE_ROW && n < SQLITE_LANES_CHECK)
        ids[n++] = sqlite3_column_int64(st, 0);
    enum store_result r =
        rc == SQLITE_DONE || rc == SQLITE_ROW ? STORE_OK : sqlite_conn_fail(b->c, rc, "lanes due");
    sqlite3_reset(st);
    for (size_t i = 0; i < n && r == STORE_OK; i++) {
        struct lane_cand cand = {.lane = ids[i]};
        r = be_head(b, &cand);
    }
    return r;
}

enum store_result sqlite_lanes_candidates(struct sqlite_conn *c, const char *queue,
                                          const char *caps, int64_t now, int limit,
                                          struct lane_cand *out, size_t *n)
{
    struct lanes_be b = {c, now, NULL, NULL};
    *n = 0;
    enum store_result r = refresh(&b, queue);
    if (r != STORE_OK)
        return r;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LANES_OPEN);
    int rc = sqlite_conn_bindf(st, "titi", queue, now, caps, (int64_t)limit);
    while (more(rc) && *n < (size_t)limit && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        struct lane_cand *cand = &out[*n];
        const char *ckey = (const char *)sqlite3_column_text(st, 1);
        *cand = (struct lane_cand){.lane = sqlite3_column_int64(st, 0),
                                   .id = sqlite3_column_int64(st, 2),
                                   .priority = sqlite3_column_int64(st, 3),
                                   .run_at = sqlite3_column_int64(st, 4)};
        if (ckey && *ckey && !(cand->ckey = strdup(ckey))) {
            rc = SQLITE_NOMEM;
            break;
        }
        (*n)++;
    }
    r = rc == SQLITE_DONE || rc == SQLITE_ROW ? STORE_OK : sqlite_conn_fail(c, rc, "open lanes");
    sqlite3_reset(st);
    return r;
}

enum store_result sqlite_lanes_claim(struct sqlite_conn *c, const struct sqlite_lanes_take *take,
                                     int64_t now, struct sqlite_notes *notes,
                                     struct lane_cand *cands, size_t n, int max_jobs,
                                     struct job *out, size_t *got)
{
    struct lanes_be b = {c, now, take, notes};
    struct lane_key *keys = n ? calloc(n, sizeof *keys) : NULL;
    if (n && !keys) {
        log_error("out of memory for %zu claim keys", n);
        return STORE_ERROR;
    }
    enum store_result r =
        lane_claim_run(&sqlite_lane_ops, &b, now, cands, n, max_jobs, keys, n, out, got);
    lane_keys_clear(keys, n);
    free(keys);
    return r;
}
