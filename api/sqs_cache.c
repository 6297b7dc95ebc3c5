/* The SQS listener's copies of queue rows (see sqs_cache.h). */
#include "sqs_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    struct sqs_queue q; /* q.stored unused: the text is in stored */
    char stored[SQS_CACHE_STORED_MAX + 1];
    int64_t read_ms;   /* when the read of the copy started; 0: empty */
    int64_t forgot_ms; /* the last forget of a queue of this slot */
};

struct sqs_cache {
    pthread_mutex_t mu;
    struct slot slots[SQS_CACHE_SLOTS];
};

/* The slot of a name: FNV-1a. */
static size_t slot_of(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % SQS_CACHE_SLOTS;
}

struct sqs_cache *sqs_cache_new(void)
{
    struct sqs_cache *c = calloc(1, sizeof *c);
    if (c && pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

void sqs_cache_free(struct sqs_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int sqs_cache_get(struct sqs_cache *c, const char *name, int64_t now_ms, struct sqs_queue *q,
                  char *stored)
{
    if (!c)
        return 0;
    struct slot *s = &c->slots[slot_of(name)];
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    if (s->read_ms && now_ms - s->read_ms < SQS_CACHE_TTL_MS && now_ms >= s->read_ms &&
        strcmp(s->q.name, name) == 0) {
        *q = s->q;
        memcpy(stored, s->stored, strlen(s->stored) + 1);
        q->stored = stored;
        hit = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

void sqs_cache_put(struct sqs_cache *c, const struct sqs_queue *q, int64_t started_ms)
{
    size_t n = q->stored ? strlen(q->stored) : 0;
    if (!c || n > SQS_CACHE_STORED_MAX || started_ms <= 0)
        return;
    struct slot *s = &c->slots[slot_of(q->name)];
    pthread_mutex_lock(&c->mu);
    if (started_ms > s->forgot_ms) {
        s->q = *q;
        s->q.stored = NULL;
        memcpy(s->stored, q->stored ? q->stored : "", n + 1);
        s->read_ms = started_ms;
    }
    pthread_mutex_unlock(&c->mu);
}

void sqs_cache_forget(struct sqs_cache *c, const char *name, int64_t now_ms)
{
    if (!c)
        return;
    struct slot *s = &c->slots[slot_of(name)];
    pthread_mutex_lock(&c->mu);
    s->read_ms = 0;
    s->forgot_ms = now_ms;
    pthread_mutex_unlock(&c->mu);
}
