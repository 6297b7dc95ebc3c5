/* Noting the leases a sweep batch ended (store.h: sweep_result_note), for the backends. Apart
 * from store.c, which opens the backends: calls flow down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store.h"

int sweep_result_note(struct sweep_result *res, int cap, const char *queue, int timed_out,
                      int requeued)
{
    struct sweep_queue *q = NULL;
    for (int i = res->nqueues - 1; i >= 0 && !q; i--) /* a batch's rows often share a queue */
        if (strcmp(res->queues[i].queue, queue) == 0)
            q = &res->queues[i];
    if (!q) {
        if (!res->queues && !(res->queues = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *q))) {
            log_error("out of memory counting %d swept leases", cap);
            return -1;
        }
        if (res->nqueues >= cap) { /* more leases than the batch: a bug of the backend */
            log_error("sweep: more than %d leases noted in one batch", cap);
            return -1;
        }
        q = &res->queues[res->nqueues++];
        memset(q, 0, sizeof *q);
        snprintf(q->queue, sizeof q->queue, "%s", queue);
    }
    (*(timed_out ? &q->timed_out : &q->expired))++;
    (*(requeued ? &q->requeued : &q->failed))++;
    return 0;
}
