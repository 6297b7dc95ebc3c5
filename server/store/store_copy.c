/* The copy seam's helpers for the backends (store_copy.h): what a row costs in memory, and
 * releasing rows. Apart from store_migrate.c, which opens the backends: calls flow down. */
#include <stdlib.h>
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

const struct store_copy_shape store_copy_shapes[STORE_COPY_TABLES] = {
    [STORE_COPY_LIMITS] = {1, 4, "limits"},         [STORE_COPY_KEYS] = {1, 1, "key states"},
    [STORE_COPY_KEY_CLAIMS] = {1, 2, "key claims"}, [STORE_COPY_SCHEDULES] = {4, 10, "schedules"},
    [STORE_COPY_TICKER] = {1, 1, "ticker rows"},    [STORE_COPY_SQS_QUEUES] = {2, 2, "SQS queues"},
};

size_t store_table_row_bytes(const struct store_table_row *r)
{
    size_t n = sizeof *r;
    for (int k = 0; k < STORE_COPY_TEXTS; k++)
        n += len_of(r->text[k]);
    return n;
}

void store_table_rows_clear(struct store_table_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        for (int k = 0; k < STORE_COPY_TEXTS; k++) {
            free(rows[i].text[k]);
            rows[i].text[k] = NULL;
        }
}
