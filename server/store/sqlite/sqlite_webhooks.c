/* Webhook subscriptions for SQLite (store_webhook.h): the read on a reader, and put, delete,
 * the delivery lease's compare and swap and an attempt's end on the writer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_row.h"
#include "sqlite_store.h"
#include "store_webhook.h"
#include "webhook.h"

static int copy_text(sqlite3_stmt *st, int col, char **out)
{
    *out = NULL;
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return 0;
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s && (*out = strdup(s)) ? 0 : -1;
}

static int64_t col_time(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? JOB_NONE : sqlite3_column_int64(st, col);
}

/* The row of the current step (SQL_WEBHOOK_COLUMNS) into out. Returns 0, or -1 when out of
 * memory (logged; out is left empty). */
static int webhook_row(sqlite3_stmt *st, void *element)
{
    struct store_webhook *w = element;
    *w = (struct store_webhook){0};
    const char *name = (const char *)sqlite3_column_text(st, 0);
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    int bad = copy_text(st, 1, &w->url) | copy_text(st, 3, &w->queues) |
              copy_text(st, 4, &w->secret) | copy_text(st, 5, &w->prev_secret) |
              copy_text(st, 16, &w->last_error) | copy_text(st, 18, &w->disabled_reason) |
              copy_text(st, 22, &w->lease_token);
    w->types = (unsigned)sqlite3_column_int64(st, 2);
    w->prev_until = col_time(st, 6);
    w->enabled = sqlite3_column_int(st, 7) != 0;
    w->ordered = sqlite3_column_int(st, 8) != 0;
    w->created_at = sqlite3_column_int64(st, 9);
    w->updated_at = sqlite3_column_int64(st, 10);
    w->delivered_seq = sqlite3_column_int64(st, 11);
    w->failing_since = col_time(st, 12);
    w->next_attempt_at = col_time(st, 13);
    w->attempts = sqlite3_column_int64(st, 14);
    w->last_status = col_time(st, 15);
    w->last_attempt_at = col_time(st, 17);
    w->deliveries = sqlite3_column_int64(st, 19);
    w->failures = sqlite3_column_int64(st, 20);
    w->failed_events = sqlite3_column_int64(st, 21);
    w->lease_until = col_time(st, 23);
    w->retry_at = col_time(st, 24);
    w->nparked_all = sqlite3_column_count(st) > 25 ? sqlite3_column_int64(st, 25) : 0;
    if (bad || !w->url || !w->secret) {
        log_error("out of memory reading webhook %s", w->name);
        store_webhook_clear(w);
        return -1;
    }
    return 0;
}

static void webhooks_release(void *rows, size_t n)
{
    store_webhooks_free(rows, n);
}

/* Run st (bound) and collect its rows into a new array *out of *n; st is reset. */
static enum store_result rows_on(struct sqlite_conn *c, sqlite3_stmt *st,
                                 struct store_webhook **out, size_t *n)
{
    void *rows = NULL;
    enum store_result r = sqlite_row_collect(c, st, "webhooks", sizeof **out, webhook_row,
                                             webhooks_release, &rows, n);
    *out = rows;
    return r;
}

enum store_result sqlite_read_webhooks(struct store *s, const char *name,
                                       struct store_webhook **out, size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *out = NULL;
    *n = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    sqlite3_stmt *st = sqlite_conn_stmt(c, name ? STMT_WEBHOOK_GET : STMT_WEBHOOKS_ALL);
    int rc = name ? sqlite_conn_bind_text(st, 1, name) : SQLITE_OK;
    enum store_result r =
        rc == SQLITE_OK ? rows_on(c, st, out, n) : sqlite_conn_fail(c, rc, "bind webhooks");
    if (rc != SQLITE_OK)
        sqlite3_reset(st);
    sqlite_pool_give(pool, c);
    return r == STORE_OK && name && *n == 0 ? STORE_NOT_FOUND : r;
}

/* Run st (bound, or rc the failed bind); the one row it returns into *out (STORE_NOT_FOUND:
 * none; *out is left alone then). */
static enum store_result one_row(struct sqlite_conn *c, sqlite3_stmt *st, int rc, const char *what,
                                 struct store_webhook *out)
{
    if (rc != SQLITE_OK) {
        sqlite3_reset(st);
        return sqlite_conn_fail(c, rc, what);
    }
    struct store_webhook *rows = NULL;
    size_t n = 0;
    enum store_result r = rows_on(c, st, &rows, &n);
    if (r == STORE_OK && n == 0)
        r = STORE_NOT_FOUND;
    if (r == STORE_OK) {
        store_webhook_clear(out);
        *out = rows[0];
        rows[0] = (struct store_webhook){0};
    }
    store_webhooks_free(rows, n);
    return r;
}

/* Whether subscription name exists, on the writer: STORE_OK or STORE_NOT_FOUND. */
static enum store_result exists(struct sqlite_conn *c, const char *name)
{
    struct store_webhook w = {0};
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_WEBHOOK_GET);
    enum store_result r = one_row(c, st, sqlite_conn_bind_text(st, 1, name), "webhook read", &w);
    store_webhook_clear(&w);
    return r;
}

static enum store_result put(struct sqlite_conn *c, struct store_webhook_call *a, int64_t now)
{
    enum store_result r = exists(c, a->name);
    if (r != STORE_OK && r != STORE_NOT_FOUND)
        return r;
    a->created = r == STORE_NOT_FOUND;
    const struct store_webhook *in = a->in;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_WEBHOOK_PUT);
    int rc = sqlite_conn_bind_text(st, 1, a->name);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, in->url);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)in->types);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 4, in->queues);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 5, in->secret);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 6, a->fresh_secret);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 7, in->enabled ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 8, in->ordered ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 9, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 10, now + WEBHOOK_ROTATE_SECONDS);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 11, STORE_WEBHOOKS_MAX);
    r = one_row(c, st, rc, "webhook put", a->out);
    return r == STORE_NOT_FOUND ? STORE_CONFLICT : r; /* a new name past the bound */
}

/* The parked events of w into w->parked (STORE_WEBHOOK_PARKED_MAX at most). */
static enum store_result parked_of(struct sqlite_conn *c, struct store_webhook *w)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_WEBHOOK_PARKED);
    int rc = sqlite_conn_bind_text(st, 1, w->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, STORE_WEBHOOK_PARKED_MAX);
    while (rc == SQLITE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        if (!w->parked && !(w->parked = calloc(STORE_WEBHOOK_PARKED_MAX, sizeof *w->parked))) {
            sqlite3_reset(st);
            log_error("out of memory reading parked events of webhook %s", w->name);
            return STORE_ERROR;
        }
        w->parked[w->nparked++] = (struct store_webhook_parked){
            .seq = sqlite3_column_int64(st, 0),
            .job_id = sqlite3_column_int64(st, 1),
            .attempts = sqlite3_column_int64(st, 2),
            .failing_since = col_time(st, 3),
            .next_attempt_at = col_time(st, 4),
        };
        rc = SQLITE_OK;
    }
    sqlite3_reset(st);
    w->nparked_all = (int64_t)w->nparked;
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "webhook parked");
}

/* Run the parked-event write id on name with seq (and, for a park, p's other fields). */
static enum store_result park_write(struct sqlite_conn *c, enum stmt_id id, const char *name,
                                    int64_t seq, const struct store_webhook_parked *p)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite_conn_bind_text(st, 1, name);
    if (rc == SQLITE_OK && id != STMT_WEBHOOK_UNPARK_ALL)
        rc = sqlite3_bind_int64(st, 2, seq);
    if (rc == SQLITE_OK && p)
        rc = sqlite3_bind_int64(st, 3, p->job_id);
    if (rc == SQLITE_OK && p)
        rc = sqlite3_bind_int64(st, 4, p->attempts);
    if (rc == SQLITE_OK && p)
        rc = sqlite_conn_bind_time(st, 5, p->failing_since);
    if (rc == SQLITE_OK && p)
        rc = sqlite_conn_bind_time(st, 6, p->next_attempt_at);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "webhook park");
}

static enum store_result lease(struct sqlite_conn *c, struct store_webhook_call *a, int64_t now)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_WEBHOOK_LEASE);
    int rc = sqlite_conn_bind_text(st, 1, a->name);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, a->token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, now + a->lease_seconds);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, now);
    enum store_result r = one_row(c, st, rc, "webhook lease", a->out);
    if (r == STORE_OK)
        return parked_of(c, a->out);
    if (r != STORE_NOT_FOUND)
        return r;
    r = exists(c, a->name);
    return r == STORE_OK ? STORE_CONFLICT : r;
}

static enum store_result done(struct sqlite_conn *c, struct store_webhook_call *a, int64_t now)
{
    const struct store_webhook *in = a->in;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_WEBHOOK_DONE);
    int rc = sqlite_conn_bind_text(st, 1, a->name);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, a->token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, in->delivered_seq);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 5, in->failing_since);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 6, in->next_attempt_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 7, in->attempts);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 8, in->last_status);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 9, in->last_error);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 10, in->last_attempt_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 11, in->deliveries);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 12, in->failures);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 13, in->failed_events);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 14, in->enabled ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 15, in->disabled_reason);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 16, in->retry_at);
    enum store_result r = one_row(c, st, rc, "webhook done", a->out);
    if (r == STORE_OK && a->park)
        r = park_write(c, STMT_WEBHOOK_PARK, a->name, a->park->seq, a->park);
    if (r == STORE_OK && a->unpark)
        r = park_write(c, STMT_WEBHOOK_UNPARK, a->name, a->unpark, NULL);
    if (r != STORE_NOT_FOUND)
        return r;
    r = exists(c, a->name);
    return r == STORE_OK ? STORE_LEASE_LOST : r;
}

static int webhook_tx(struct sqlite_conn *c, void *p)
{
    struct store_call *call = p;
    struct store_webhook_call *a = call->webhook;
    switch (a->op) {
    case STORE_WEBHOOK_PUT:
        return put(c, a, call->now);
    case STORE_WEBHOOK_DELETE: {
        sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_WEBHOOK_DELETE);
        enum store_result r =
            one_row(c, st, sqlite_conn_bind_text(st, 1, a->name), "webhook delete", a->out);
        return r == STORE_OK ? park_write(c, STMT_WEBHOOK_UNPARK_ALL, a->name, 0, NULL) : r;
    }
    case STORE_WEBHOOK_LEASE:
        return lease(c, a, call->now);
    default:
        return done(c, a, call->now);
    }
}

static void webhook_discard(void *p)
{
    struct store_call *call = p;
    store_webhook_clear(call->webhook->out);
    call->webhook->created = 0;
}

/* A webhook write, in one block. */
struct webhook_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
};

struct sqlite_tx *sqlite_webhook_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    static const char *const names[] = {"webhook put", "webhook delete", "webhook lease",
                                        "webhook done"};
    struct webhook_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting a webhook write");
        call->result = STORE_ERROR;
        return NULL;
    }
    b->tx = (struct sqlite_tx){.name = names[call->webhook->op],
                               .fn = webhook_tx,
                               .discard = webhook_discard,
                               .arg = call,
                               .now = call->at_clock ? &call->now : NULL,
                               .weight = 1};
    return &b->tx;
}
