#include "waitq.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "rand.h"

/* Every armed waiter is in one doubly linked list (for shutdown and notify_all) and, through
 * its links, in the list of each of its queues (a hash table of queue names), so a notify
 * visits only the waiters of its queue. Parked waiters are also in a binary min-heap by
 * due_ms: the single deadline thread sleeps until the earliest one. One mutex guards it all;
 * notify and shutdown wake waiters from the caller's thread. */
#define QUEUE_BUCKETS 1024 /* power of two */

/* The armed waiters of one queue, oldest first. Freed when its last waiter leaves (unless a
 * notify is walking it: busy). */
struct waitq_queue {
    struct waitq_queue *next; /* in its bucket */
    struct waitq_link *head, *tail;
    int busy;
    char name[];
};

struct waitq {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* the deadline thread sleeps here (CLOCK_MONOTONIC) */
    pthread_t thread;
    struct waiter *head, *tail;
    size_t parked;
    size_t armed;
    struct waiter **heap; /* parked waiters, heap[0] the earliest due_ms */
    size_t heap_cap;      /* >= armed: a park never allocates */
    struct waitq_queue *buckets[QUEUE_BUCKETS];
    int closing;            /* waitq_shutdown() was called */
    int stop;               /* the deadline thread must exit */
    int64_t sleep_until_ms; /* what the deadline thread sleeps towards; INT64_MAX: none */
    int64_t recheck_ms;     /* 0: none; see waitq_new() */
};

#define DEADLINE_SLACK_MS 10

/* --- the deadline heap (q->parked entries) --- */

static void heap_set(struct waitq *q, size_t i, struct waiter *w)
{
    q->heap[i] = w;
    w->heap_at = i;
}

static void heap_up(struct waitq *q, size_t i)
{
    struct waiter *w = q->heap[i];
    while (i > 0 && q->heap[(i - 1) / 2]->due_ms > w->due_ms) {
        heap_set(q, i, q->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(q, i, w);
}

static void heap_down(struct waitq *q, size_t i)
{
    struct waiter *w = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->parked)
            break;
        if (c + 1 < q->parked && q->heap[c + 1]->due_ms < q->heap[c]->due_ms)
            c++;
        if (q->heap[c]->due_ms >= w->due_ms)
            break;
        heap_set(q, i, q->heap[c]);
        i = c;
    }
    heap_set(q, i, w);
}

static void heap_remove(struct waitq *q, struct waiter *w)
{
    size_t i = w->heap_at;
    struct waiter *last = q->heap[--q->parked];
    if (last == w)
        return;
    heap_set(q, i, last);
    heap_up(q, i);
    heap_down(q, last->heap_at);
}

/* --- queues --- */

static size_t bucket_of(const char *name)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)(h & (QUEUE_BUCKETS - 1));
}

static struct waitq_queue *queue_find(struct waitq *q, const char *name, int create)
{
    struct waitq_queue **b = &q->buckets[bucket_of(name)];
    for (struct waitq_queue *e = *b; e; e = e->next) {
        if (strcmp(e->name, name) == 0)
            return e;
    }
    if (!create)
        return NULL;
    size_t len = strlen(name);
    struct waitq_queue *e = calloc(1, sizeof *e + len + 1);
    if (!e)
        return NULL;
    memcpy(e->name, name, len + 1);
    e->next = *b;
    *b = e;
    return e;
}

static void queue_free_if_empty(struct waitq *q, struct waitq_queue *e)
{
    if (e->head || e->busy)
        return;
    struct waitq_queue **p = &q->buckets[bucket_of(e->name)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    free(e);
}

static void link_remove(struct waitq *q, struct waitq_link *l)
{
    struct waitq_queue *e = l->queue;
    if (l->prev)
        l->prev->next = l->next;
    else
        e->head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        e->tail = l->prev;
    l->prev = l->next = NULL;
    queue_free_if_empty(q, e);
}

/* Link w into the list of each of its distinct queues. Returns 0, or -1 (out of memory:
 * nothing linked). */
static int links_add(struct waitq *q, struct waiter *w)
{
    w->nlinks = 0;
    for (size_t i = 0; i < w->nqueues; i++) {
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++)
            dup = strcmp(w->queues[k], w->queues[i]) == 0;
        if (dup)
            continue;
        struct waitq_queue *e = queue_find(q, w->queues[i], 1);
        if (!e) {
            while (w->nlinks > 0)
                link_remove(q, &w->links[--w->nlinks]);
            return -1;
        }
        struct waitq_link *l = &w->links[w->nlinks++];
        *l = (struct waitq_link){.w = w, .queue = e, .prev = e->tail};
        if (e->tail)
            e->tail->next = l;
        else
            e->head = l;
        e->tail = l;
    }
    return 0;
}

static void list_remove(struct waitq *q, struct waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->prev = w->next = NULL;
    while (w->nlinks > 0)
        link_remove(q, &w->links[--w->nlinks]);
    w->armed = 0;
    q->armed--;
    if (w->parked) {
        w->parked = 0;
        heap_remove(q, w);
    }
}

/* Remove a parked waiter and call its wake(). Lock held. w may be freed by its owner as soon
 * as the lock is released, so nothing touches it after the call. */
static void wake_locked(struct waitq *q, struct waiter *w)
{
    list_remove(q, w);
    w->wake(w->arg);
}

static void *deadline_main(void *arg)
{
    struct waitq *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        int64_t now = clock_mono_ms();
        while (q->parked > 0 && q->heap[0]->due_ms <= now)
            wake_locked(q, q->heap[0]);
        int64_t next = q->parked > 0 ? q->heap[0]->due_ms : INT64_MAX;
        /* Deadlines within DEADLINE_SLACK_MS of each other share one wake-up of this thread,
         * so it wakes at most 1000 / DEADLINE_SLACK_MS times a second; a waiter is woken at
         * most that late, never early. */
        if (next != INT64_MAX && next < now + DEADLINE_SLACK_MS)
            next = now + DEADLINE_SLACK_MS;
        q->sleep_until_ms = next;
        if (next == INT64_MAX) {
            pthread_cond_wait(&q->cond, &q->mu);
        } else {
            /* clock_mono_ms() is CLOCK_MONOTONIC, the clock the condvar waits on. */
            struct timespec ts = clock_ts_ms(next);
            pthread_cond_timedwait(&q->cond, &q->mu, &ts);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

struct waitq *waitq_new(int64_t recheck_ms)
{
    struct waitq *q = calloc(1, sizeof *q);
    if (!q) {
        log_error("waitq: out of memory");
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    clock_cond_init(&q->cond);
    q->sleep_until_ms = INT64_MAX;
    q->recheck_ms = recheck_ms > 0 ? recheck_ms : 0;
    int rc = pthread_create(&q->thread, NULL, deadline_main, q);
    if (rc != 0) {
        log_error("waitq: cannot start the deadline thread: %s", strerror(rc));
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->mu);
        free(q);
        return NULL;
    }
    return q;
}

void waitq_free(struct waitq *q)
{
    if (!q)
        return;
    waitq_shutdown(q);
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    /* Armed waiters that were never parked belong to requests still running; there must be
     * none by now, but unlink them so that a late disarm finds nothing. */
    while (q->head)
        list_remove(q, q->head);
    free(q->heap);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* Room in the heap for every armed waiter and one more. Lock held. Returns 0 or -1. */
static int heap_reserve(struct waitq *q)
{
    if (q->armed < q->heap_cap)
        return 0;
    size_t cap = q->heap_cap ? 2 * q->heap_cap : 64;
    struct waiter **h = realloc(q->heap, cap * sizeof *h);
    if (!h)
        return -1;
    q->heap = h;
    q->heap_cap = cap;
    return 0;
}

int waitq_arm(struct waitq *q, struct waiter *w)
{
    pthread_mutex_lock(&q->mu);
    if (w->armed)
        list_remove(q, w); /* armed twice: re-arm rather than link it in twice */
    if (q->closing || w->nqueues == 0 || w->nqueues > JOB_QUEUES_MAX || heap_reserve(q) != 0 ||
        links_add(q, w) != 0) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    w->armed = 1;
    q->armed++;
    w->parked = 0;
    w->signaled = 0;
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    pthread_mutex_unlock(&q->mu);
    return 0;
}

int waitq_park(struct waitq *q, struct waiter *w, void (*suspend)(void *arg), void *arg)
{
    pthread_mutex_lock(&q->mu);
    if (!w->armed) {
        /* Not armed (a bug of the caller, or the waitq was freed under it): never park. */
        pthread_mutex_unlock(&q->mu);
        return 1;
    }
    if (w->signaled || q->closing || w->deadline_ms <= clock_mono_ms()) {
        list_remove(q, w);
        pthread_mutex_unlock(&q->mu);
        return 1;
    }
    w->parked = 1;
    w->due_ms = w->deadline_ms;
    if (q->recheck_ms) {
        int64_t check = clock_mono_ms() + q->recheck_ms + (int64_t)(rand_unit() * q->recheck_ms);
        if (check < w->due_ms)
            w->due_ms = check;
    }
    q->heap[q->parked] = w; /* heap_reserve() made room when it was armed */
    q->parked++;
    heap_up(q, q->parked - 1);
    suspend(arg);
    if (w->due_ms < q->sleep_until_ms) {
        q->sleep_until_ms = w->due_ms;
        pthread_cond_signal(&q->cond);
    }
    pthread_mutex_unlock(&q->mu);
    return 0;
}

void waitq_disarm(struct waitq *q, struct waiter *w)
{
    if (!q || !w)
        return;
    pthread_mutex_lock(&q->mu);
    if (w->armed)
        list_remove(q, w);
    pthread_mutex_unlock(&q->mu);
}

/* Wake up to `n` parked waiters of queue that wait on it alone (every one with n SIZE_MAX),
 * every parked one that waits on several queues, and mark the armed ones not yet parked. */
static void notify_queue(struct waitq *q, const char *queue, size_t n)
{
    if (!q || !queue)
        return;
    pthread_mutex_lock(&q->mu);
    struct waitq_queue *e = queue_find(q, queue, 0);
    if (e) {
        e->busy = 1; /* waking its last waiter must not free it under this loop */
        size_t woken = 0;
        struct waitq_link *l = e->head;
        while (l) {
            struct waitq_link *after = l->next; /* another waiter's: a waiter links once */
            struct waiter *w = l->w;
            if (!w->parked) {
                w->signaled = 1;
            } else if (w->nqueues > 1 || woken < n) {
                woken += w->nqueues == 1;
                wake_locked(q, w);
            }
            l = after;
        }
        e->busy = 0;
        queue_free_if_empty(q, e);
    }
    pthread_mutex_unlock(&q->mu);
}

void waitq_notify(struct waitq *q, const char *queue)
{
    notify_queue(q, queue, SIZE_MAX);
}

void waitq_notify_some(struct waitq *q, const char *queue, size_t n)
{
    notify_queue(q, queue, n);
}

/* Wake every parked waiter and mark every armed one. Lock held. */
static void wake_all_locked(struct waitq *q)
{
    struct waiter *w = q->head;
    while (w) {
        struct waiter *after = w->next;
        if (w->parked)
            wake_locked(q, w);
        else
            w->signaled = 1;
        w = after;
    }
}

void waitq_notify_all(struct waitq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    wake_all_locked(q);
    pthread_mutex_unlock(&q->mu);
}

void waitq_shutdown(struct waitq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    wake_all_locked(q);
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

int waitq_closing(struct waitq *q)
{
    pthread_mutex_lock(&q->mu);
    int closing = q->closing;
    pthread_mutex_unlock(&q->mu);
    return closing;
}

size_t waitq_parked(struct waitq *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->parked;
    pthread_mutex_unlock(&q->mu);
    return n;
}
