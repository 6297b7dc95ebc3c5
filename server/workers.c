/* A bounded pool of threads over one FIFO queue (see workers.h). */
#include "workers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define WORKERS_MAX 64

struct workers {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* an item was queued, or the pool is stopping */
    struct work *head, *tail;
    size_t queued, queue_max;
    int abandoned; /* no more items: workers_abandon() */
    int stop;      /* threads end once the queue is empty */
    int nthreads;
    pthread_t threads[WORKERS_MAX];
    const char *name;
};

static void *worker_main(void *arg)
{
    struct workers *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        struct work *w = p->head;
        if (!w)
            break; /* stopping, and nothing waits */
        p->head = w->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        pthread_mutex_unlock(&p->mu);
        w->run(w, 0);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Stop the first n threads and free p (on a failed start or at the end of workers_stop). */
static void join_and_free(struct workers *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

struct workers *workers_start(int nthreads, size_t queue_max, const char *name)
{
    if (nthreads < 1 || nthreads > WORKERS_MAX || queue_max < 1) {
        log_error("%s: %d threads with a queue of %zu: out of bounds", name, nthreads, queue_max);
        return NULL;
    }
    struct workers *p = calloc(1, sizeof *p);
    if (!p) {
        log_error("%s: out of memory", name);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->queue_max = queue_max;
    p->name = name;
    for (; p->nthreads < nthreads; p->nthreads++) {
        int rc = pthread_create(&p->threads[p->nthreads], NULL, worker_main, p);
        if (rc != 0) {
            log_error("%s: cannot start a thread: %s", name, strerror(rc));
            join_and_free(p, p->nthreads);
            return NULL;
        }
    }
    return p;
}

int workers_submit(struct workers *p, struct work *w)
{
    w->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->abandoned || p->queued >= p->queue_max) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    if (p->tail)
        p->tail->next = w;
    else
        p->head = w;
    p->tail = w;
    p->queued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

size_t workers_queued(struct workers *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->queued;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void workers_abandon(struct workers *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->abandoned = 1;
    struct work *w = p->head;
    size_t n = p->queued;
    p->head = p->tail = NULL;
    p->queued = 0;
    pthread_mutex_unlock(&p->mu);
    if (n > 0)
        log_info("%s: %zu waiting item%s abandoned", p->name, n, n == 1 ? "" : "s");
    while (w) {
        struct work *next = w->next; /* run may free w */
        w->run(w, 1);
        w = next;
    }
}

void workers_stop(struct workers *p)
{
    if (!p)
        return;
    workers_abandon(p);
    join_and_free(p, p->nthreads);
}
