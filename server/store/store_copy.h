/* Copying every job from one database into another (jobqd migrate: a SQLite file into an
 * empty PostgreSQL database). A backend that can be a source implements struct store_export,
 * one that can be a target struct store_import, each in its own folder; store_migrate() (in
 * store_migrate.c) drives them and knows neither. Like store.h, this header says what each
 * call guarantees, never how. Single-threaded: one caller uses a source or a target at a
 * time. */
#ifndef JOBQ_STORE_COPY_H
#define JOBQ_STORE_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "store.h"

/* One job row as stored: every column, those the API never shows included. */
struct store_row {
    struct job job;        /* lease_token included; an API status */
    int64_t lease_seconds; /* the claim's lease length (heartbeat's default); JOB_NONE */
    int64_t deadline_at;   /* claimed_at + max_runtime_seconds of a running job; JOB_NONE */
};

/* One entry of a job's attempt history as stored. */
struct store_attempt_row {
    int64_t job_id;
    int64_t fencing_token; /* the claim's: with job_id, what names the entry */
    struct job_attempt attempt;
};

/* The tables beside the jobs that a copy carries, row by row as stored. Each row is its
 * texts, then its integers (store_copy_shapes); the first text and the first integer (never
 * NULL) order the rows and name one. */
enum store_copy_table {
    STORE_COPY_LIMITS,     /* key; max_running, rate_jobs, rate_per_seconds (NULL: none),
                              changed_at */
    STORE_COPY_KEYS,       /* a concurrency key's state: key; paused_until */
    STORE_COPY_KEY_CLAIMS, /* the claims of a key in one second (rate windows): key; at, n */
    STORE_COPY_SCHEDULES,  /* name, job, cron, timezone; created_at, every_seconds, catch_up,
                              overlap, paused, next_run_at, last_run_at, last_job_id,
                              updated_at, rev (struct store_schedule) */
    STORE_COPY_TICKER,     /* the tickers' liveness row: ""; seen_at */
    STORE_COPY_SQS_QUEUES, /* the SQS front end's queues (store_sqs.h): name, attributes;
                              created_at, modified_at */
    STORE_COPY_TABLES
};

#define STORE_COPY_TEXTS 4 /* texts of a table row at most */
#define STORE_COPY_INTS 10 /* integers of a table row at most */

/* How many texts and integers a row of each table has. */
struct store_copy_shape {
    int texts, ints;
    const char *name; /* for messages: "limits", ... */
};
extern const struct store_copy_shape store_copy_shapes[STORE_COPY_TABLES];

/* One row of a table beside the jobs: a NULL text or a JOB_NONE integer is SQL NULL. */
struct store_table_row {
    char *text[STORE_COPY_TEXTS]; /* owned (store_table_rows_clear) */
    int64_t num[STORE_COPY_INTS];
};

/* The bytes of r's texts and r itself. Can't fail. */
size_t store_table_row_bytes(const struct store_table_row *r);

/* Release the texts of rows[0..n). Accepts NULL. */
void store_table_rows_clear(struct store_table_row *rows, size_t n);

/* How many jobs a database holds. */
struct store_copy_counts {
    int64_t status[JOB_STATUS_COUNT];  /* per API status (enum job_status) */
    int64_t total;                     /* every row, one with an unknown status included */
    int64_t attempts;                  /* entries of attempt history, of every job */
    int64_t tables[STORE_COPY_TABLES]; /* rows of each table beside the jobs */
    int64_t last_id; /* source: the highest id ever given, deleted jobs included (0: none) */
};

/* The bytes of the strings of r (what a batch of rows costs in memory). Can't fail. */
size_t store_row_bytes(const struct store_row *r);

/* Release the strings of rows[0..n). Accepts NULL. */
void store_rows_clear(struct store_row *rows, size_t n);

/* A database opened to be copied: read-only, one consistent snapshot from the first read to
 * close, and no jobqd can open it meanwhile. */
struct store_export;
struct store_export_ops {
    /* Count the jobs (see struct store_copy_counts). STORE_OK or an error result (logged). */
    enum store_result (*counts)(struct store_export *x, struct store_copy_counts *out);
    /* The jobs with id > after_id in id order: at most max_rows of them, and no more once
     * their store_row_bytes() add up to max_bytes (always at least one when one is left),
     * into out (which must hold max_rows); *n is how many (0: none left). On STORE_OK the
     * caller owns the rows' strings (store_rows_clear); else nothing is left in out. */
    enum store_result (*rows)(struct store_export *x, int64_t after_id, size_t max_rows,
                              size_t max_bytes, struct store_row *out, size_t *n);
    /* The attempt history entries after (after_job, after_token) in (job_id, fencing_token)
     * order, at most max_rows, into out; *n is how many (0: none left). On STORE_OK the
     * caller owns their strings (job_attempt_clear); else nothing is left in out. */
    enum store_result (*attempts)(struct store_export *x, int64_t after_job, int64_t after_token,
                                  size_t max_rows, struct store_attempt_row *out, size_t *n);
    /* The names of the paused queues after `after` ("" first) in name order, at most max,
     * into names (the caller frees each); *n is how many (0: none left). */
    enum store_result (*paused)(struct store_export *x, const char *after, size_t max, char **names,
                                size_t *n);
    /* The rows of table `table` after (after_text, after_int) in (first text, first
     * integer) order, at most max_rows, and no more once their store_table_row_bytes() add
     * up to max_bytes (at least one when one is left), into out; *n is how many (0: none
     * left). On STORE_OK the caller owns their texts (store_table_rows_clear); else nothing
     * is left in out. */
    enum store_result (*table)(struct store_export *x, enum store_copy_table table,
                               const char *after_text, int64_t after_int, size_t max_rows,
                               size_t max_bytes, struct store_table_row *out, size_t *n);
    /* End the snapshot, release the database and free x. */
    void (*close)(struct store_export *x);
};
struct store_export {
    const struct store_export_ops *ops;
};

/* A database opened to receive a copy: its schema is up to date (the migrations of a normal
 * start, under the same lock). Nothing it receives is visible to others, and no other writer
 * can change it, until commit; closing it without commit leaves it as it was. */
struct store_import;
struct store_import_ops {
    /* Start the copy. Returns STORE_OK; STORE_CONFLICT when the database already holds jobs
     * (*held is then how many, or a lower bound), with nothing changed; or an error result
     * (logged). New jobs enqueued after commit get ids above last_id. */
    enum store_result (*begin)(struct store_import *t, int64_t last_id, int64_t *held);
    /* Add rows[0..n) (borrowed) with their ids and every column as given. A job stored as
     * scheduled by the source is stored as the backend stores such a job. STORE_OK or an
     * error result (logged); after an error, only close is allowed. */
    enum store_result (*write)(struct store_import *t, const struct store_row *rows, size_t n);
    /* Add attempt history entries rows[0..n) (borrowed) as given. Same results as write. */
    enum store_result (*write_attempts)(struct store_import *t,
                                        const struct store_attempt_row *rows, size_t n);
    /* Pause the queues names[0..n) as of now. Same results as write. */
    enum store_result (*pause)(struct store_import *t, char *const *names, size_t n, int64_t now);
    /* Add rows[0..n) (borrowed) of table `table` as given. Same results as write. */
    enum store_result (*write_table)(struct store_import *t, enum store_copy_table table,
                                     const struct store_table_row *rows, size_t n);
    /* Count the jobs as the database now holds them, the copy included (per API status: a
     * backend without a scheduled status counts such jobs as queued). last_id is 0. */
    enum store_result (*counts)(struct store_import *t, struct store_copy_counts *out);
    /* Make the copy durable and visible. STORE_OK or an error result (logged; nothing
     * changed). */
    enum store_result (*commit)(struct store_import *t);
    /* Undo an uncommitted copy, release the database and free t. */
    void (*close)(struct store_import *t);
};
struct store_import {
    const struct store_import_ops *ops;
};

/* Rows per batch and bytes per batch at most: what one read from the source and one write
 * into the target carry. */
#define STORE_COPY_BATCH_ROWS 500
#define STORE_COPY_BATCH_BYTES (8 * 1024 * 1024)

/* What store_migrate() did. */
struct store_migrate_report {
    struct store_copy_counts source;   /* as the source held them (stored statuses) */
    struct store_copy_counts target;   /* as the target holds them after the copy */
    int64_t copied;                    /* rows written */
    int64_t attempts;                  /* attempt history entries written */
    int64_t tables[STORE_COPY_TABLES]; /* rows written of each table beside the jobs */
};

/* Copy every job (every column, ids kept), with its attempt history, which queues are
 * paused, the limits, the state of the concurrency keys (pauses, rate windows), the schedules
 * and the tickers' liveness row, of the SQLite database file `from` into the
 * PostgreSQL database `to` (a postgres:// or postgresql:// URL), which must hold no job; its
 * schema is created or brought up to date first. The source is opened read-only and only
 * while no jobqd has it open. The copy is written in batches of at most
 * STORE_COPY_BATCH_ROWS rows and STORE_COPY_BATCH_BYTES bytes, all in one target transaction
 * that commits only once the target's counts per status (and of attempt history entries and of
 * the rows of every other table) equal the source's: a failed or
 * interrupted copy leaves the target without jobs. New ids continue after the highest id the
 * source ever gave. Returns 0 with *rep filled, or -1 with one sentence in err (size n) that
 * says why, never with a password (details may have been logged before). */
int store_migrate(const char *from, const char *to, struct store_migrate_report *rep, char *err,
                  size_t n);

#endif
