/* The jobs per queue and stored status that the counts table keeps (GET /queues reads them
 * without scanning the jobs), moved by the writes of the SQLite store without a trigger on
 * insert or update: each write transaction notes how its jobs moved (sqlite_counts_move, into
 * its struct sqlite_notes), and the runner adds up the moves of a whole group and writes them
 * just before the group's COMMIT, one row per queue and status however many jobs moved
 * (sqlite_counts_write). The table is exact at every commit: only this process writes the
 * file (it holds the lock file). Deletes (retention, purge) still count by trigger. */
#ifndef JOBQ_SQLITE_COUNTS_H
#define JOBQ_SQLITE_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "sqlite_conn.h"

/* One (queue, status) and how many jobs it gained (negative: lost). */
struct sqlite_count {
    char *queue; /* owned */
    int status;
    int64_t delta;
};

/* The moves of one transaction, one entry per (queue, status). */
struct sqlite_counts {
    struct sqlite_count *v;
    size_t n, cap;
};

#define SQLITE_COUNTS_INIT                                                                         \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Note that one job of queue moved from stored status `from` to `to` (-1: none, for a job
 * inserted). Returns 0, or -1 when memory ran out (logged; the caller fails its transaction). */
int sqlite_counts_move(struct sqlite_counts *c, const char *queue, int from, int to);

/* Forget every move. Accepts an empty c. This function can't fail. */
void sqlite_counts_clear(struct sqlite_counts *c);

/* Inside the writer's open transaction on conn: add up the moves of sets[0..n) (NULL entries
 * are skipped) and add each (queue, status) total that is not 0 to the counts table. Returns
 * SQLITE_DONE, or the code of the step that failed (SQLITE_NOMEM when memory ran out); the
 * caller then rolls the transaction back. */
int sqlite_counts_write(struct sqlite_conn *conn, const struct sqlite_counts *const *sets,
                        size_t n);

#endif
