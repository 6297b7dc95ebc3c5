/* Noting the leases a sweep batch ended and the jobs it expired (sweep_result.h),
 * for the backends. Apart from store.c, which opens the backends: calls flow down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_result.h"

#include "log.h"

/* The row of queue among the rows the running part noted (made when missing, with room for
 * cap rows for the part), or NULL when out of memory or past cap (logged). */
static struct sweep_queue *row(struct sweep_result *res, int cap, const char *queue)
{
    for (int i = res->nqueues - 1; i >= res->kept; i--) /* a batch's rows often share a queue */
        if (strcmp(res->queues[i].queue, queue) == 0)
            return &res->queues[i];
    if (cap < 1)
        cap = 1;
    if (res->nqueues - res->kept >= cap) { /* more rows than the batch: a bug of the backend */
        log_error("sweep: more than %d jobs noted in one batch", cap);
        return NULL;
    }
    if (res->nqueues >= res->room) {
        int room = res->kept + cap;
        struct sweep_queue *q = realloc(res->queues, (size_t)room * sizeof *q);
        if (!q) {
            log_error("out of memory counting %d swept jobs", cap);
            return NULL;
        }
        res->queues = q;
        res->room = room;
    }
    struct sweep_queue *q = &res->queues[res->nqueues++];
    memset(q, 0, sizeof *q);
    snprintf(q->queue, sizeof q->queue, "%s", queue);
    return q;
}

int sweep_result_note(struct sweep_result *res, int cap, const char *queue, int timed_out,
                      int requeued)
{
    struct sweep_queue *q = row(res, cap, queue);
    if (!q)
        return -1;
    (*(timed_out ? &q->timed_out : &q->expired))++;
    (*(requeued ? &q->requeued : &q->failed))++;
    return 0;
}

int sweep_result_note_expired(struct sweep_result *res, int cap, const char *queue)
{
    struct sweep_queue *q = row(res, cap, queue);
    if (!q)
        return -1;
    q->lapsed++;
    return 0;
}
