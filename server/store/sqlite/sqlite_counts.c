#include "sqlite_counts.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

#define WRITE_KEYS 64 /* distinct (queue, status) added up before their rows are written */

/* Add delta to (queue, status) in c, a new entry when it has none. */
static int add(struct sqlite_counts *c, const char *queue, int status, int64_t delta)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].status == status && strcmp(c->v[i].queue, queue) == 0) {
            c->v[i].delta += delta;
            return 0;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        struct sqlite_count *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            log_error("out of memory noting a count move");
            return -1;
        }
        c->v = v;
        c->cap = cap;
    }
    char *q = strdup(queue);
    if (!q) {
        log_error("out of memory noting a count move");
        return -1;
    }
    c->v[c->n++] = (struct sqlite_count){q, status, delta};
    return 0;
}

int sqlite_counts_move(struct sqlite_counts *c, const char *queue, int from, int to)
{
    if (from == to)
        return 0;
    if (from >= 0 && add(c, queue, from, -1) != 0)
        return -1;
    return to >= 0 ? add(c, queue, to, 1) : 0;
}

void sqlite_counts_clear(struct sqlite_counts *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].queue);
    free(c->v);
    c->v = NULL;
    c->n = c->cap = 0;
}

/* A (queue, status) total of a group; queue borrowed from the transactions' notes. */
struct total {
    const char *queue;
    int status;
    int64_t delta;
};

/* Add each total that is not 0 to its row of the counts table. */
static int flush(struct sqlite_conn *conn, const struct total *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i].delta == 0)
            continue;
        sqlite3_stmt *st = sqlite_conn_stmt(conn, STMT_COUNT_ADD);
        int rc = sqlite_conn_bind_text(st, 1, t[i].queue);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 2, t[i].status);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 3, t[i].delta);
        if (rc == SQLITE_OK)
            rc = sqlite_conn_step(conn, st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return rc;
    }
    return SQLITE_DONE;
}

int sqlite_counts_write(struct sqlite_conn *conn, const struct sqlite_counts *const *sets, size_t n)
{
    struct total t[WRITE_KEYS];
    size_t nt = 0;
    for (size_t s = 0; s < n; s++) {
        for (size_t i = 0; sets[s] && i < sets[s]->n; i++) {
            const struct sqlite_count *m = &sets[s]->v[i];
            size_t k = 0;
            while (k < nt && (t[k].status != m->status || strcmp(t[k].queue, m->queue) != 0))
                k++;
            if (k == WRITE_KEYS) { /* full: what is added up so far goes first (sums add up) */
                int rc = flush(conn, t, nt);
                if (rc != SQLITE_DONE)
                    return rc;
                nt = k = 0;
            }
            if (k == nt)
                t[nt++] = (struct total){m->queue, m->status, 0};
            t[k].delta += m->delta;
        }
    }
    return flush(conn, t, nt);
}
