/* store_links for SQLite: a job's dependencies or dependents, read on a reader connection. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_pool.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

/* Copy one row (id, status, result, queue) of st into *l. Returns 0, or -1 out of memory. */
static int link_row(sqlite3_stmt *st, struct job_link *l)
{
    memset(l, 0, sizeof *l);
    l->id = sqlite3_column_int64(st, 0);
    int status = sqlite3_column_int(st, 1);
    l->status = status == SQLITE_SCHEDULED ? JOB_QUEUED : (enum job_status)status;
    const char *result = (const char *)sqlite3_column_text(st, 2);
    const char *queue = (const char *)sqlite3_column_text(st, 3);
    l->result = result ? strdup(result) : NULL;
    l->queue = strdup(queue ? queue : "");
    return (result && !l->result) || !l->queue ? -1 : 0;
}

static enum store_result links_on(struct sqlite_conn *c, int64_t id, int dependents,
                                  struct job_link **out, size_t *n, int *more)
{
    int cap = dependents ? STORE_LINKS_MAX : JOB_DEPS_MAX;
    sqlite3_stmt *st = sqlite_conn_stmt(c, dependents ? STMT_LINKS_DEPENDENTS : STMT_LINKS_DEPS);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, cap + 1);
    struct job_link *links = calloc((size_t)cap + 1, sizeof *links);
    enum store_result r = links ? STORE_OK : STORE_ERROR;
    while (r == STORE_OK && (rc == SQLITE_OK || rc == SQLITE_ROW) &&
           (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        if (*n == (size_t)cap) {
            *more = 1;
            continue;
        }
        if (link_row(st, &links[*n]) != 0) {
            log_error("out of memory reading the links of job %lld", (long long)id);
            r = STORE_ERROR;
        }
        (*n)++;
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "links");
    sqlite3_reset(st);
    if (r == STORE_OK && *n == 0) { /* none, or no such job */
        struct job j;
        r = sqlite_row_get(c, id, 0, &j);
        if (r == STORE_OK)
            job_clear(&j);
    }
    if (r != STORE_OK || *n == 0) {
        job_links_free(links, *n);
        *n = 0;
        links = NULL;
    }
    *out = links;
    return r;
}

enum store_result sqlite_read_links(struct store *s, int64_t id, int dependents,
                                    struct job_link **out, size_t *n, int *more)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *out = NULL;
    *n = 0;
    *more = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    enum store_result r = links_on(c, id, dependents, out, n, more);
    sqlite_pool_give(pool, c);
    return r;
}
