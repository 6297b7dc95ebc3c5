/* The pieces of PostgreSQL's enqueue that its plain path (pg_enqueue.c) and its path for jobs
 * with dependencies (pg_enqueue_deps.c) share (pg_enqueue.h). */
#include "dedup.h"
#include "job_cols.h"
#include "pg_enqueue.h"
#include "pg_row.h"

void pg_insert_cols(struct pg_arr col[PG_INSERT_PARAMS], const struct job_spec *sp, int64_t now)
{
    pg_arr_text(&col[0], sp->queue);
    pg_arr_text(&col[1], sp->payload);
    pg_arr_int(&col[2], sp->priority);
    pg_arr_int(&col[3], job_spec_run_at(sp, now));
    pg_arr_int(&col[4], sp->max_attempts);
    pg_arr_int(&col[5], sp->max_runtime_seconds);
    pg_arr_text(&col[6], sp->requires);
    pg_arr_text(&col[7], sp->idempotency_key);
    pg_arr_text(&col[9], sp->concurrency_key);
    pg_arr_int(&col[10], job_spec_expires_at(sp, now));
    pg_arr_text(&col[11], sp->dedup_key);
    pg_arr_int(&col[12], sp->dedup_key ? (int64_t)sp->dedup_mode : JOB_NONE);
    pg_arr_int(&col[13], job_spec_dedup_seconds(sp));
    pg_arr_text(&col[14], sp->traceparent);
    pg_arr_text(&col[15], sp->traceparent ? sp->tracestate : NULL);
}

int pg_insert_params(struct pg_arr col[PG_INSERT_PARAMS], int64_t now, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_JOB_INSERT, .what = "enqueue", .n = PG_INSERT_PARAMS};
    int rc = 0;
    for (int c = 0; c < PG_INSERT_PARAMS; c++) {
        if (c != 8 && (c < PG_INSERT_PLAIN || col[c].s))
            rc |= pg_arr_bind(&col[c], b, c);
    }
    b->params[8] = pg_int_param(b->ints[8], now);
    if (rc != 0)
        pg_bind_free(b);
    return rc;
}

void pg_note_queued(struct store_news *notes, const struct job *j, int64_t now)
{
    if (j->status != JOB_QUEUED)
        return;
    if (j->run_at <= now)
        store_news_ready(notes, j->queue, !j->requires);
    else
        store_news_later(notes, j->queue, j->run_at);
}

enum store_result pg_idempotency_find(struct pg_conn *c, const struct job_spec *sp, struct job *out)
{
    const char *key[2] = {sp->queue, sp->idempotency_key};
    return pg_one_row(c, PG_JOB_BY_KEY, 2, key, 0, "enqueue: idempotency hit", out);
}
