/* Limits for SQLite: the limits read (on a reader, or inside a limit write for its answer),
 * and the limit writes, which reopen the lanes of the keys a limit covers in the same
 * transaction. Keys are selected by bytewise ranges: [key, key "\x01") is one key (no key
 * holds a NUL byte), [prefix, the prefix's successor) the keys starting with a prefix. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_store.h"
#include "store_limits.h"

/* The range of job keys that limit key `key` covers, [lo, hi) bytewise (buffers of
 * LIMIT_KEY_MAX + 2 bytes): NULL covers every key (no valid UTF-8 text starts with 0xFF); an
 * exact key itself; a pattern the keys that start with its prefix. */
static void key_range(const char *key, char *lo, char *hi)
{
    if (!key) {
        lo[0] = '\0';
        strcpy(hi, "\xff");
        return;
    }
    long plen = limit_pattern_prefix_len(key);
    if (plen < 0) {
        strcpy(lo, key);
        strcpy(hi, key);
        strcat(hi, "\x01");
        return;
    }
    memcpy(lo, key, (size_t)plen);
    lo[plen] = '\0';
    memcpy(hi, key, (size_t)plen);
    while (plen > 0 && (unsigned char)hi[plen - 1] == 0xff)
        plen--; /* never in UTF-8, but the successor must stay a successor */
    if (plen == 0) {
        strcpy(hi, "\xff");
        return;
    }
    hi[plen - 1] = (char)((unsigned char)hi[plen - 1] + 1);
    hi[plen] = '\0';
}

/* Run the limits read of key (NULL: every limit) on c into acc. */
static enum store_result limits_on(struct sqlite_conn *c, const char *key, int64_t now,
                                   struct store_limits_acc *acc)
{
    char lo[LIMIT_KEY_MAX + 2], hi[LIMIT_KEY_MAX + 2];
    key_range(key, lo, hi);
    *acc = (struct store_limits_acc){.now = now};
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LIMITS_READ);
    int rc = sqlite_conn_bind_text(st, 1, lo);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, hi);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, now);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite_conn_step(c, st)) != SQLITE_ROW)
            break;
        store_limits_row(acc, sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1),
                         sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                         sqlite3_column_int64(st, 4));
    }
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE) {
        r = sqlite_conn_fail(c, rc, "limits");
        store_limits_acc_clear(acc);
    }
    sqlite3_reset(st);
    return r;
}

enum store_result sqlite_read_limits(struct store *s, const char *key, int64_t now,
                                     struct limit **out, size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *out = NULL;
    *n = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    struct store_limits_acc acc;
    enum store_result r = limits_on(c, key, now, &acc);
    sqlite_pool_give(pool, c);
    return r == STORE_OK ? store_limits_take(&acc, key, out, n) : r;
}

/* The limit `key` as the read shows it, into out, on the writer. */
static enum store_result limit_on(struct sqlite_conn *c, const char *key, int64_t now,
                                  struct limit *out)
{
    struct store_limits_acc acc;
    enum store_result r = limits_on(c, key, now, &acc);
    return r == STORE_OK ? store_limits_take_one(&acc, key, out) : r;
}

struct limit_arg {
    struct store_call *call;
    struct sqlite_notes *notes;
};

/* Reopen the closed lanes of the keys that limit key covers; tell their queues. */
static enum store_result lanes_open(struct sqlite_conn *c, const char *key,
                                    struct sqlite_notes *notes)
{
    char lo[LIMIT_KEY_MAX + 2], hi[LIMIT_KEY_MAX + 2];
    key_range(key, lo, hi);
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LANES_REOPEN_RANGE);
    int rc = sqlite_conn_bind_text(st, 1, lo);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, hi);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW)
            store_news_ready(&notes->news, (const char *)sqlite3_column_text(st, 0), 0);
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "reopen lanes");
    sqlite3_reset(st);
    return r;
}

/* A bound that is 0 when absent is stored as NULL. */
static int bind_bound(sqlite3_stmt *st, int i, int64_t v)
{
    return v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

static int put_tx(struct sqlite_conn *c, void *p)
{
    struct limit_arg *a = p;
    const struct store_call *call = a->call;
    const struct limit *l = call->limit_put.limit;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LIMIT_PUT);
    int rc = sqlite_conn_bind_text(st, 1, l->key);
    if (rc == SQLITE_OK)
        rc = bind_bound(st, 2, l->max_running);
    if (rc == SQLITE_OK)
        rc = bind_bound(st, 3, l->rate_jobs);
    if (rc == SQLITE_OK)
        rc = bind_bound(st, 4, l->rate_jobs ? l->rate_per_seconds : 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 5, call->now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 6, STORE_LIMITS_MAX);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "limit put");
    if (sqlite3_changes(c->db) == 0)
        return STORE_CONFLICT; /* a new key past STORE_LIMITS_MAX: nothing written */
    enum store_result r = lanes_open(c, l->key, a->notes);
    return r == STORE_OK ? limit_on(c, l->key, call->now, call->limit_put.out) : r;
}

static int delete_tx(struct sqlite_conn *c, void *p)
{
    struct limit_arg *a = p;
    const struct store_call *call = a->call;
    const char *key = call->limit_delete.key;
    enum store_result r = limit_on(c, key, call->now, call->limit_delete.out);
    if (r != STORE_OK)
        return r; /* STORE_NOT_FOUND: nothing written */
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LIMIT_DELETE);
    int rc = sqlite_conn_bind_text(st, 1, key);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "limit delete");
    return lanes_open(c, key, a->notes);
}

/* A limit write and its arguments, in one block. */
struct limit_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct limit_arg a;
};

struct sqlite_tx *sqlite_limit_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    int put = call->kind == STORE_CALL_LIMIT_PUT;
    struct limit_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting a limit %s", put ? "put" : "delete");
        call->result = STORE_ERROR;
        return NULL;
    }
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct limit_arg){call, &b->notes};
    b->tx = (struct sqlite_tx){.name = put ? "limit put" : "limit delete",
                               .fn = put ? put_tx : delete_tx,
                               .arg = &b->a,
                               .notes = &b->notes,
                               .now = call->at_clock ? &call->now : NULL,
                               .weight = 1};
    return &b->tx;
}
