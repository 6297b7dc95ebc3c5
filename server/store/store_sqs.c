/* The SQS front end's queue rows (see store_sqs.h): their release. The synchronous writes
 * are in store.c with the others. */
#include "store_sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_sqs_arn_queue(const char *arn, char out[JOB_QUEUE_MAX + 1])
{
    const char *name = arn ? strrchr(arn, ':') : NULL;
    size_t n = name ? strlen(name + 1) : 0;
    if (n == 0 || n > JOB_QUEUE_MAX)
        return -1;
    snprintf(out, JOB_QUEUE_MAX + 1, "%s", name + 1);
    return 0;
}

void store_dead_letter_spec(const struct job *j, const char *target, struct job_spec *out)
{
    *out = (struct job_spec){
        .queue = target,
        .payload = j->payload,
        .priority = (int32_t)j->priority,
        .run_at = JOB_NONE,
        .delay = 0,
        .max_attempts = j->max_attempts,
        .max_runtime_seconds = j->max_runtime_seconds,
        .requires = j->requires,
        .concurrency_key = j->concurrency_key,
    };
}

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
