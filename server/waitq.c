#include "waitq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "rand.h"

/* Waiters are kept in one doubly linked list under one mutex. Parked waiters cost no thread:
 * a single deadline thread sleeps until the earliest parked deadline and wakes whoever is
 * due; notify and shutdown wake waiters from the caller's thread. */
struct waitq {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* the deadline thread sleeps here (CLOCK_MONOTONIC) */
    pthread_t thread;
    struct waiter *head, *tail;
    size_t parked;
    int closing;            /* waitq_shutdown() was called */
    int stop;               /* the deadline thread must exit */
    int64_t sleep_until_ms; /* what the deadline thread sleeps towards; INT64_MAX: none */
    int64_t recheck_ms;     /* 0: none; see waitq_new() */
};

#define DEADLINE_SLACK_MS 10

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
    w->armed = 0;
    if (w->parked) {
        w->parked = 0;
        q->parked--;
    }
}

/* Remove a parked waiter and call its wake(). Lock held. w may be freed by its owner as soon
 * as the lock is released, so nothing touches it after the call. */
static void wake_locked(struct waitq *q, struct waiter *w)
{
    list_remove(q, w);
    w->wake(w->arg);
}

static int waits_on(const struct waiter *w, const char *queue)
{
    for (size_t i = 0; i < w->nqueues; i++) {
        if (strcmp(w->queues[i], queue) == 0)
            return 1;
    }
    return 0;
}

static void *deadline_main(void *arg)
{
    struct waitq *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        int64_t now = clock_mono_ms();
        int64_t next = INT64_MAX;
        struct waiter *w = q->head;
        while (w) {
            struct waiter *after = w->next;
            if (w->parked) {
                if (w->due_ms <= now)
                    wake_locked(q, w);
                else if (w->due_ms < next)
                    next = w->due_ms;
            }
            w = after;
        }
        /* Deadlines within DEADLINE_SLACK_MS of each other share one scan of the list, so
         * thousands of parked waiters cost at most 1000 / DEADLINE_SLACK_MS scans a second;
         * a waiter is woken at most that late, never early. */
        if (next != INT64_MAX && next < now + DEADLINE_SLACK_MS)
            next = now + DEADLINE_SLACK_MS;
        q->sleep_until_ms = next;
        if (next == INT64_MAX) {
            pthread_cond_wait(&q->cond, &q->mu);
        } else {
            /* clock_mono_ms() is CLOCK_MONOTONIC, the clock the condvar waits on. */
            struct timespec ts = {.tv_sec = next / 1000, .tv_nsec = (next % 1000) * 1000000};
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
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cond, &ca);
    pthread_condattr_destroy(&ca);
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
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

int waitq_arm(struct waitq *q, struct waiter *w)
{
    pthread_mutex_lock(&q->mu);
    if (q->closing) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    if (w->armed)
        list_remove(q, w); /* armed twice: re-arm rather than link it in twice */
    w->armed = 1;
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
    q->parked++;
    w->due_ms = w->deadline_ms;
    if (q->recheck_ms) {
        int64_t check = clock_mono_ms() + q->recheck_ms + (int64_t)(rand_unit() * q->recheck_ms);
        if (check < w->due_ms)
            w->due_ms = check;
    }
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

void waitq_notify(struct waitq *q, const char *queue)
{
    if (!q || !queue)
        return;
    pthread_mutex_lock(&q->mu);
    struct waiter *w = q->head;
    while (w) {
        struct waiter *after = w->next;
        if (waits_on(w, queue)) {
            if (w->parked)
                wake_locked(q, w);
            else
                w->signaled = 1;
        }
        w = after;
    }
    pthread_mutex_unlock(&q->mu);
}

void waitq_notify_some(struct waitq *q, const char *queue, size_t n)
{
    if (!q || !queue)
        return;
    pthread_mutex_lock(&q->mu);
    size_t woken = 0;
    struct waiter *w = q->head;
    while (w) {
        struct waiter *after = w->next;
        if (waits_on(w, queue)) {
            if (!w->parked) {
                w->signaled = 1;
            } else if (w->nqueues > 1 || woken < n) {
                woken += w->nqueues == 1;
                wake_locked(q, w);
            }
        }
        w = after;
    }
    pthread_mutex_unlock(&q->mu);
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
