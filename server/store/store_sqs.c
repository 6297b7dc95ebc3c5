/* The SQS front end's queue rows (see store_sqs.h): their release and the synchronous
 * writes, built on store_submit. */
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

enum store_result store_sqs_queue_put(struct store *s, const char *name, const char *attributes,
                                      int create, int64_t now, struct store_sqs_queue *out)
{
    struct store_call call = {
        .kind = STORE_CALL_SQS_QUEUE_PUT,
        .now = now,
        .sqs_queue_put = {.name = name, .attributes = attributes, .create = create, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_sqs_queue_delete(struct store *s, const char *name, int64_t now)
{
    struct store_call call = {
        .kind = STORE_CALL_SQS_QUEUE_DELETE, .now = now, .sqs_queue_delete = {.name = name}};
    return store_call_run(s, &call);
}
