/* A one-shot latch: one thread waits until another opens it. Used by the synchronous
 * wrappers around the writer thread's queue. */
#ifndef JOBQ_LATCH_H
#define JOBQ_LATCH_H

#include <pthread.h>

struct latch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
};

/* Make a closed latch. This function can't fail (default mutex and condvar attributes). */
void latch_init(struct latch *l);

/* Open the latch and wake its waiter. The waiter may free l as soon as it sees it open, so
 * the caller must not touch l afterwards. */
void latch_open(struct latch *l);

/* Wait until the latch is open, then release its resources (l may then be freed). */
void latch_wait_and_destroy(struct latch *l);

#endif
