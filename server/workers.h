/* A small pool of threads that run work items from one bounded queue, first in first out.
 * It knows nothing of what the items do: the HTTP layer runs its store reads on one, so that
 * a slow read holds a worker, never a thread that answers requests. */
#ifndef JOBQ_WORKERS_H
#define JOBQ_WORKERS_H

#include <stddef.h>

/* One item. The caller owns it and fills run; the pool links it while it waits. */
struct work {
    /* Called exactly once per accepted item, with no lock of the pool held: on a pool thread
     * with abandoned = 0, or with abandoned = 1 on the thread of workers_abandon() or
     * workers_stop() when the pool gave up on it before it started. It may free the item. */
    void (*run)(struct work *w, int abandoned);
    struct work *next; /* private */
};

struct workers;

/* Start nthreads (1..64) threads with a queue of at most queue_max (>= 1) waiting items;
 * name (borrowed, for logs) says what they run. Returns the pool, or NULL after logging why. */
struct workers *workers_start(int nthreads, size_t queue_max, const char *name);

/* Queue w for a pool thread. Returns 0, or -1 when queue_max items wait already or the pool
 * was abandoned: w is then not queued and its run is never called. Thread-safe. */
int workers_submit(struct workers *p, struct work *w);

/* Items waiting now (not the running ones). Thread-safe. */
size_t workers_queued(struct workers *p);

/* Refuse further items and run every waiting item with abandoned = 1, on this thread.
 * Running items go on. Idempotent. Accepts NULL. */
void workers_abandon(struct workers *p);

/* workers_abandon(), then wait for the running items to end, join the threads and free p.
 * Accepts NULL. */
void workers_stop(struct workers *p);

#endif
