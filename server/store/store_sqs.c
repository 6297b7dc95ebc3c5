/* The SQS front end's queue rows (see store_sqs.h): their release. The synchronous writes
 * are in store.c with the others. */
#include "store_sqs.h"

#include <stdlib.h>

void store_sqs_queue_clear(struct store_sqs_queue *q)
{
    if (!q)
        return;
    free(q->attributes);
    *q = (struct store_sqs_queue){0};
}

void store_sqs_queues_free(struct store_sqs_queue *q, size_t n)
{
    for (size_t i = 0; q && i < n; i++)
        store_sqs_queue_clear(&q[i]);
    free(q);
}
