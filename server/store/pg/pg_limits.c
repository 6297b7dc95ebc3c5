/* Limits for PostgreSQL: the limits read (on a pooled read connection, or inside a limit write
 * for its answer), and the limit writes, one at a time across processes (an advisory lock), which
 * reopen the lanes of the keys a limit covers in the same transaction. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"
#include "store_limits.h"

/* The limits read of key (NULL: every limit) on c into acc: an exact key by its own rows, a
 * pattern (or every limit: the empty prefix) by the keys starting with its prefix. */
static enum store_result limits_on(struct pg_conn *c, const char *key, int64_t now,
                                   struct store_limits_acc *acc)
{
    char prefix[LIMIT_KEY_MAX + 1] = "", nowb[24];
    long plen = key ? limit_pattern_prefix_len(key) : 0;
    if (plen >= 0 && key) {
        memcpy(prefix, key, (size_t)plen);
        prefix[plen] = '\0';
    }
    const char *params[2] = {plen < 0 ? key : prefix, pg_int_param(nowb, now)};
    *acc = (struct store_limits_acc){.now = now};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, plen < 0 ? PG_LIMITS_READ_KEY : PG_LIMITS_READ_PREFIX, 2,
                                 params, "limits", &r);
    if (!res)
        return r;
    for (int i = 0, rows = PQntuples(res); i < rows; i++)
        store_limits_row(acc, (int)pg_row_int(res, i, 0), PQgetvalue(res, i, 1),
                         pg_row_int(res, i, 2), pg_row_int(res, i, 3), pg_row_int(res, i, 4));
    PQclear(res);
    return STORE_OK;
}

enum store_result pg_read_limits(struct store *s, const char *key, int64_t now, struct limit **out,
                                 size_t *n)
{
    struct pg_store *st = pg_store_of(s);
    *out = NULL;
    *n = 0;
    struct store_limits_acc acc;
    enum store_result r = STORE_ERROR;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct pg_conn *c = NULL;
        if ((r = pg_pool_take_read(st, &c)) != STORE_OK)
            break;
        r = limits_on(c, key, pg_now(st, now), &acc);
        pg_pool_give_read(st, c);
        if (r != STORE_UNAVAILABLE) /* a dead connection: once more on a new one */
            break;
    }
    if (r != STORE_OK) {
        atomic_fetch_add(&st->errors, 1);
        return r;
    }
    return store_limits_take(&acc, key, out, n);
}

/* The limit `key` as the read shows it, into out, inside the write. */
static enum store_result limit_on(struct pg_conn *c, const char *key, int64_t now,
                                  struct limit *out)
{
    struct store_limits_acc acc;
    enum store_result r = limits_on(c, key, now, &acc);
    return r == STORE_OK ? store_limits_take_one(&acc, key, out) : r;
}

/* Run statement id with n parameters for its effect; STORE_OK with *rows set, or the
 * failure. */
static enum store_result run(struct pg_conn *c, enum pg_stmt_id id, int n,
                             const char *const *params, const char *what, int *rows)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, what, &r);
    if (!res)
        return r;
    if (rows)
        *rows = PQntuples(res);
    PQclear(res);
    return STORE_OK;
}

/* Reopen the closed lanes of the keys that limit key covers; tell their queues. */
static enum store_result lanes_open(struct pg_conn *c, const char *key, struct store_news *notes)
{
    char prefix[LIMIT_KEY_MAX + 1];
    long plen = limit_pattern_prefix_len(key);
    if (plen >= 0) {
        memcpy(prefix, key, (size_t)plen);
        prefix[plen] = '\0';
    }
    const char *params[2] = {plen < 0 ? key : prefix, plen < 0 ? "true" : "false"};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_LANES_OPEN, 2, params, "reopen lanes", &r);
    if (!res)
        return r;
    for (int i = 0, rows = PQntuples(res); i < rows; i++)
        store_news_ready(notes, PQgetvalue(res, i, 0), 0);
    PQclear(res);
    return STORE_OK;
}

static enum store_result put_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_call *a = p;
    const struct limit *l = a->call->limit_put.limit;
    enum store_result r = run(c, PG_LIMIT_LOCK, 0, NULL, "limit put: lock", NULL);
    if (r != STORE_OK)
        return r;
    char b[5][24];
    const char *params[6] = {l->key,
                             l->max_running ? pg_int_param(b[0], l->max_running) : NULL,
                             l->rate_jobs ? pg_int_param(b[1], l->rate_jobs) : NULL,
                             l->rate_jobs ? pg_int_param(b[2], l->rate_per_seconds) : NULL,
                             pg_int_param(b[3], a->now),
                             pg_int_param(b[4], STORE_LIMITS_MAX)};
    int rows = 0;
    if ((r = run(c, PG_LIMIT_PUT, 6, params, "limit put", &rows)) != STORE_OK)
        return r;
    if (rows == 0)
        return STORE_CONFLICT; /* a new key past STORE_LIMITS_MAX: nothing written */
    if ((r = lanes_open(c, l->key, notes)) != STORE_OK)
        return r;
    return limit_on(c, l->key, a->now, a->call->limit_put.out);
}

static enum store_result delete_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_call *a = p;
    const char *key = a->call->limit_delete.key;
    enum store_result r = run(c, PG_LIMIT_LOCK, 0, NULL, "limit delete: lock", NULL);
    if (r == STORE_OK)
        r = limit_on(c, key, a->now, a->call->limit_delete.out);
    if (r != STORE_OK)
        return r; /* STORE_NOT_FOUND: nothing written (the lock goes with the transaction) */
    const char *params[1] = {key};
    if ((r = run(c, PG_LIMIT_DELETE, 1, params, "limit delete", NULL)) != STORE_OK)
        return r;
    return lanes_open(c, key, notes);
}

int pg_limit_put_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "limit put", .fn = put_tx};
    return 1;
}

int pg_limit_delete_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "limit delete", .fn = delete_tx};
    return 1;
}
