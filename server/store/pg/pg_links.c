/* store_links for PostgreSQL: a job's dependencies or dependents, read outside any
 * transaction. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

enum store_result pg_read_links(struct store *s, int64_t id, int dependents, struct job_link **out,
                                size_t *n, int *more)
{
    *out = NULL;
    *n = 0;
    *more = 0;
    int cap = dependents ? STORE_LINKS_MAX : JOB_DEPS_MAX;
    char idb[24], lim[24];
    const char *params[2] = {pg_int_param(idb, id), pg_int_param(lim, cap + 1)};
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), dependents ? PG_LINKS_DEPENDENTS : PG_LINKS_DEPS, 2,
                                params, "links", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    if (rows > cap) {
        rows = cap;
        *more = 1;
    }
    struct job_link *links = rows ? calloc((size_t)rows, sizeof *links) : NULL;
    r = rows && !links ? STORE_ERROR : STORE_OK;
    for (int i = 0; r == STORE_OK && i < rows; i++) {
        struct job_link *l = &links[(*n)++];
        l->id = pg_row_int(res, i, 0);
        l->status = (enum job_status)pg_row_int(res, i, 1);
        if (pg_row_text(res, i, 2, &l->result) || pg_row_text(res, i, 3, &l->queue))
            r = STORE_ERROR;
    }
    PQclear(res);
    if (r == STORE_OK && rows == 0) { /* none, or no such job */
        struct job j;
        r = pg_read_get(s, id, &j);
        if (r == STORE_OK)
            job_clear(&j);
    }
    if (r != STORE_OK) {
        if (r == STORE_ERROR)
            log_error("out of memory reading the links of job %lld", (long long)id);
        job_links_free(links, *n);
        *n = 0;
        return r;
    }
    *out = links;
    return STORE_OK;
}
