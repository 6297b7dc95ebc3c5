#include "sqlite_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

int sqlite_pool_open(struct sqlite_pool *p, const char *path, int n)
{
    memset(p, 0, sizeof *p);
    if (n < 1)
        n = 1;
    int err = pthread_mutex_init(&p->mu, NULL);
    if (!err && (err = clock_cond_init(&p->cv)) != 0)
        pthread_mutex_destroy(&p->mu);
    if (err) {
        log_error("cannot create the reader pool's mutex: error %d", err);
        return -1;
    }
    p->conns = calloc((size_t)n, sizeof *p->conns);
    p->idle = calloc((size_t)n, sizeof *p->idle);
    if (!p->conns || !p->idle) {
        log_error("out of memory for %d read connections", n);
        sqlite_pool_close(p);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        p->n = i + 1;
        if (sqlite_conn_open(&p->conns[i], path, CONN_READER, 0, 0) != 0 ||
            sqlite_conn_prepare(&p->conns[i]) != 0) {
            sqlite_pool_close(p);
            return -1;
        }
        p->idle[p->nidle++] = i;
    }
    return 0;
}

void sqlite_pool_close(struct sqlite_pool *p)
{
    for (int i = 0; p->conns && i < p->n; i++)
        sqlite_conn_close(&p->conns[i]);
    free(p->conns);
    free(p->idle);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    memset(p, 0, sizeof *p);
}

struct sqlite_conn *sqlite_pool_take(struct sqlite_pool *p)
{
    int64_t deadline = clock_mono_ms() + SQLITE_POOL_WAIT_MS;
    struct timespec ts = clock_ts_ms(deadline);
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT && p->nidle == 0) {
            pthread_mutex_unlock(&p->mu);
            log_warn("no free read connection within %d ms (--readers %d)", SQLITE_POOL_WAIT_MS,
                     p->n);
            return NULL;
        }
    }
    struct sqlite_conn *c = &p->conns[p->idle[--p->nidle]];
    pthread_mutex_unlock(&p->mu);
    return c;
}

void sqlite_pool_give(struct sqlite_pool *p, struct sqlite_conn *c)
{
    pthread_mutex_lock(&p->mu);
    p->idle[p->nidle++] = (int)(c - p->conns);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}
