/* The SQS listener's copies of queue rows, for the message actions (send, receive, delete,
 * change visibility, and their batches): each reads its queue's row before it runs, and
 * without the copy that read (a reader thread's store call) is a third of a message's cost
 * on the server. A copy lives SQS_CACHE_TTL_MS; this process's CreateQueue,
 * SetQueueAttributes and DeleteQueue drop theirs when they commit, another process's are
 * seen within SQS_CACHE_TTL_MS (AWS allows itself 60 s: docs/sqs.md). Thread-safe. */
#ifndef JOBQ_SQS_CACHE_H
#define JOBQ_SQS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sqs_attrs.h"

#define SQS_CACHE_SLOTS 64        /* queues kept at most (one slot per name's hash) */
#define SQS_CACHE_TTL_MS 1000     /* a copy's life */
#define SQS_CACHE_STORED_MAX 4096 /* a row's stored attributes longer than this: not kept */

struct sqs_cache;

/* A new, empty cache, or NULL when out of memory. */
struct sqs_cache *sqs_cache_new(void);

/* Free c. Accepts NULL. */
void sqs_cache_free(struct sqs_cache *c);

/* Times are clock_mono_ms(). */

/* Copy the row of queue `name`, when c holds one younger than SQS_CACHE_TTL_MS at now_ms,
 * into *q, its stored attributes into stored (SQS_CACHE_STORED_MAX + 1 bytes; q->stored
 * points there). Returns 1 then, else 0. c NULL: 0. */
int sqs_cache_get(struct sqs_cache *c, const char *name, int64_t now_ms, struct sqs_queue *q,
                  char *stored);

/* Keep a copy of q, whose read from the store started at started_ms. Does nothing when c is
 * NULL, q's stored attributes are longer than SQS_CACHE_STORED_MAX, or a change of a queue of
 * its slot was forgotten since started_ms (the read may have seen the row before it). This
 * function can't fail. */
void sqs_cache_put(struct sqs_cache *c, const struct sqs_queue *q, int64_t started_ms);

/* Drop the copy of queue `name` at now_ms: its row changed (call it once the change is
 * committed). Accepts c NULL. */
void sqs_cache_forget(struct sqs_cache *c, const char *name, int64_t now_ms);

#endif
