/* The copy seam's helpers for the backends (store_copy.h): what a row costs in memory, and
 * releasing rows. Apart from store_migrate.c, which opens the backends: calls flow down. */
#include <string.h>

#include "store_copy.h"

static size_t len_of(const char *s)
{
    return s ? strlen(s) : 0;
}

size_t store_row_bytes(const struct store_row *r)
{
    const struct job *j = &r->job;
    return sizeof *r + len_of(j->queue) + len_of(j->payload) + len_of(j->requires) +
           len_of(j->idempotency_key) + len_of(j->worker_id) + len_of(j->result) +
           len_of(j->progress) + len_of(j->error_code) + len_of(j->error_detail) +
           len_of(j->lease_token);
}

void store_rows_clear(struct store_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        job_clear(&rows[i].job);
}
