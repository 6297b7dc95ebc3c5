/* store_migrate: copy every job (and the limits, keys and schedules beside them) of a SQLite
 * file into an empty PostgreSQL database through the copy seam (store_copy.h), in bounded
 * batches, verified before it commits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg_open.h"
#include "sqlite_open.h"
#include "store_copy.h"

#define PROGRESS_EVERY 100000 /* jobs between two progress lines */

/* The counts of c per API status, "queued 3, running 1, ..." into out. */
static void describe(const struct store_copy_counts *c, char *out, size_t n)
{
    const int64_t *api = c->status;
    size_t o = 0;
    out[0] = '\0';
    for (int s = JOB_QUEUED; s < JOB_STATUS_COUNT && o < n; s++) {
        int w = snprintf(out + o, n - o, "%s%s %" PRId64, s > JOB_QUEUED ? ", " : "",
                         job_status_name((enum job_status)s), api[s]);
        o += w > 0 ? (size_t)w : 0;
    }
}

/* 0 when source and target hold as many rows of every table beside the jobs, else -1 with
 * err set. */
static int verify_tables(const struct store_copy_counts *src, const struct store_copy_counts *dst,
                         char *err, size_t n)
{
    for (int k = 0; k < STORE_COPY_TABLES; k++)
        if (src->tables[k] != dst->tables[k]) {
            snprintf(err, n,
                     "the copy does not match the source (%s: %" PRId64 " in the source, %" PRId64
                     " in the target): nothing was committed",
                     store_copy_shapes[k].name, src->tables[k], dst->tables[k]);
            return -1;
        }
    return 0;
}

/* 0 when source and target hold as many jobs of every API status (and in all), attempt
 * history entries and rows of every other table, else -1 with err set. */
static int verify(const struct store_copy_counts *src, const struct store_copy_counts *dst,
                  char *err, size_t n)
{
    if (memcmp(src->status, dst->status, sizeof src->status) == 0 && src->total == dst->total) {
        if (src->attempts == dst->attempts)
            return verify_tables(src, dst, err, n);
        snprintf(err, n,
                 "the copy does not match the source (attempt history: %" PRId64
                 " entries in the source, %" PRId64 " in the target): nothing was committed",
                 src->attempts, dst->attempts);
        return -1;
    }
    char sa[256], sb[256];
    describe(src, sa, sizeof sa);
    describe(dst, sb, sizeof sb);
    snprintf(err, n,
             "the copy does not match the source (source: %s, %" PRId64
             " in all; target: %s, %" PRId64 " in all): nothing was committed",
             sa, src->total, sb, dst->total);
    return -1;
}

/* Copy every row of x into t, batch after batch. Returns 0 with *copied set, or -1 with err
 * set. */
static int copy_rows(struct store_export *x, struct store_import *t, int64_t total, int64_t *copied,
                     char *err, size_t n)
{
    struct store_row *rows = calloc(STORE_COPY_BATCH_ROWS, sizeof *rows);
    if (!rows) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    int64_t after = 0, next_report = PROGRESS_EVERY;
    *copied = 0;
    for (;;) {
        size_t got = 0;
        enum store_result r =
            x->ops->rows(x, after, STORE_COPY_BATCH_ROWS, STORE_COPY_BATCH_BYTES, rows, &got);
        if (r != STORE_OK) {
            snprintf(err, n, "reading the source failed after %" PRId64 " jobs: %s", *copied,
                     store_result_name(r));
            break;
        }
        if (got == 0) {
            free(rows);
            return 0;
        }
        r = t->ops->write(t, rows, got);
        after = rows[got - 1].job.id;
        store_rows_clear(rows, got);
        if (r != STORE_OK) {
            snprintf(err, n, "writing to the target failed after %" PRId64 " jobs: %s", *copied,
                     store_result_name(r));
            break;
        }
        *copied += (int64_t)got;
        if (*copied >= next_report) {
            log_info("migrate: %" PRId64 " of %" PRId64 " jobs copied", *copied, total);
            next_report += PROGRESS_EVERY;
        }
    }
    free(rows);
    return -1;
}

/* Copy the attempt history of x into t, batch after batch. Returns 0, or -1 with err set. */
static int copy_attempts(struct store_export *x, struct store_import *t, int64_t *copied, char *err,
                         size_t n)
{
    struct store_attempt_row *rows = calloc(STORE_COPY_BATCH_ROWS, sizeof *rows);
    if (!rows) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    int64_t after_job = 0, after_token = 0;
    *copied = 0;
    for (;;) {
        size_t got = 0;
        enum store_result r =
            x->ops->attempts(x, after_job, after_token, STORE_COPY_BATCH_ROWS, rows, &got);
        if (r == STORE_OK && got == 0)
            break;
        if (r == STORE_OK) {
            r = t->ops->write_attempts(t, rows, got);
            after_job = rows[got - 1].job_id;
            after_token = rows[got - 1].fencing_token;
            for (size_t i = 0; i < got; i++)
                job_attempt_clear(&rows[i].attempt);
            *copied += r == STORE_OK ? (int64_t)got : 0;
        }
        if (r != STORE_OK) {
            snprintf(err, n, "copying the attempt history failed after %" PRId64 " entries: %s",
                     *copied, store_result_name(r));
            free(rows);
            return -1;
        }
    }
    free(rows);
    return 0;
}

#define PAUSED_BATCH 500 /* queue names per read of the paused queues */

/* Pause in t the queues x has paused. Returns 0, or -1 with err set. */
static int copy_paused(struct store_export *x, struct store_import *t, int64_t now, char *err,
                       size_t n)
{
    char *names[PAUSED_BATCH];
    char after[JOB_QUEUE_MAX + 1] = "";
    for (;;) {
        size_t got = 0;
        enum store_result r = x->ops->paused(x, after, PAUSED_BATCH, names, &got);
        if (r == STORE_OK && got == 0)
            return 0;
        if (r == STORE_OK) {
            r = t->ops->pause(t, names, got, now);
            snprintf(after, sizeof after, "%s", names[got - 1]);
            for (size_t i = 0; i < got; i++)
                free(names[i]);
        }
        if (r != STORE_OK) {
            snprintf(err, n, "copying the paused queues failed: %s", store_result_name(r));
            return -1;
        }
    }
}

/* Copy table `table` of x into t, batch after batch. Returns 0 with *copied set, or -1 with
 * err set. */
static int copy_table(struct store_export *x, struct store_import *t, enum store_copy_table table,
                      int64_t *copied, char *err, size_t n)
{
    struct store_table_row *rows = calloc(STORE_COPY_BATCH_ROWS, sizeof *rows);
    char *after = strdup("");
    enum store_result r = rows && after ? STORE_OK : STORE_ERROR;
    int64_t after_int = INT64_MIN;
    *copied = 0;
    while (r == STORE_OK) {
        size_t got = 0;
        r = x->ops->table(x, table, after, after_int, STORE_COPY_BATCH_ROWS, STORE_COPY_BATCH_BYTES,
                          rows, &got);
        if (r != STORE_OK || got == 0)
            break;
        r = t->ops->write_table(t, table, rows, got);
        free(after); /* the last row's names: where the next batch starts */
        after = rows[got - 1].text[0];
        rows[got - 1].text[0] = NULL;
        after_int = rows[got - 1].num[0];
        store_table_rows_clear(rows, got);
        *copied += r == STORE_OK ? (int64_t)got : 0;
    }
    free(rows);
    free(after);
    if (r == STORE_OK)
        return 0;
    snprintf(err, n, "copying the %s failed after %" PRId64 " rows: %s",
             store_copy_shapes[table].name, *copied, store_result_name(r));
    return -1;
}

/* Copy every table beside the jobs. Returns 0, or -1 with err set. */
static int copy_tables(struct store_export *x, struct store_import *t,
                       struct store_migrate_report *rep, char *err, size_t n)
{
    for (int k = 0; k < STORE_COPY_TABLES; k++)
        if (copy_table(x, t, (enum store_copy_table)k, &rep->tables[k], err, n) != 0)
            return -1;
    return 0;
}

/* Start the copy into t. Returns 0, or -1 with err set. */
static int begin(struct store_import *t, const struct store_copy_counts *src, const char *to,
                 char *err, size_t n)
{
    int64_t held = 0;
    enum store_result r = t->ops->begin(t, src->last_id, &held);
    if (r == STORE_CONFLICT) {
        snprintf(err, n,
                 "the target %s already holds %" PRId64
                 "%s jobs: migrate copies only into a database without jobs",
                 to, held, held >= 1000 ? " or more" : "");
        return -1;
    }
    if (r != STORE_OK) {
        snprintf(err, n, "cannot start the copy into the target: %s", store_result_name(r));
        return -1;
    }
    return 0;
}

/* Copy x into t and commit once the counts match. Returns 0, or -1 with err set. */
static int run(struct store_export *x, struct store_import *t, const char *to,
               struct store_migrate_report *rep, char *err, size_t n)
{
    enum store_result r = x->ops->counts(x, &rep->source);
    if (r != STORE_OK) {
        snprintf(err, n, "cannot count the source's jobs: %s", store_result_name(r));
        return -1;
    }
    int64_t known = 0;
    for (int s = 0; s < JOB_STATUS_COUNT; s++)
        known += rep->source.status[s];
    if (known != rep->source.total) {
        snprintf(err, n, "the source holds %" PRId64 " jobs with an unknown status: not copied",
                 rep->source.total - known);
        return -1;
    }
    if (begin(t, &rep->source, to, err, n) != 0 ||
        copy_rows(x, t, rep->source.total, &rep->copied, err, n) != 0 ||
        copy_attempts(x, t, &rep->attempts, err, n) != 0 ||
        copy_paused(x, t, clock_now(), err, n) != 0 || copy_tables(x, t, rep, err, n) != 0)
        return -1;
    r = t->ops->counts(t, &rep->target);
    if (r != STORE_OK) {
        snprintf(err, n, "cannot count the target's jobs: %s", store_result_name(r));
        return -1;
    }
    if (verify(&rep->source, &rep->target, err, n) != 0)
        return -1;
    r = t->ops->commit(t);
    if (r != STORE_OK) {
        snprintf(err, n, "the target did not commit the copy: %s", store_result_name(r));
        return -1;
    }
    return 0;
}

int store_migrate(const char *from, const char *to, struct store_migrate_report *rep, char *err,
                  size_t n)
{
    memset(rep, 0, sizeof *rep);
    char shown[512];
    store_url_redact(to ? to : "", shown, sizeof shown);
    if (!from || !*from || store_url_is_pg(from)) {
        snprintf(err, n, "the source must be a SQLite database file");
        return -1;
    }
    if (!store_url_is_pg(to)) {
        snprintf(err, n,
                 "the target must be a PostgreSQL URL (postgres://... or postgresql://...), "
                 "not \"%s\"",
                 shown);
        return -1;
    }
    struct store_export *x = sqlite_export_open(from, err, n);
    if (!x)
        return -1;
    struct store_import *t = pg_import_open(to, err, n);
    if (!t) {
        x->ops->close(x);
        return -1;
    }
    log_info("migrate: copying the jobs of %s into %s", from, shown);
    int rc = run(x, t, shown, rep, err, n);
    t->ops->close(t); /* rolls back unless committed */
    x->ops->close(x);
    return rc;
}
