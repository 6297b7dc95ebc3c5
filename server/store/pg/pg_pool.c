/* The PostgreSQL store's bounded pool: n connections, each connected on first use and again
 * after a connection-level failure; a caller waits at most checkout_ms for a free one. Reads
 * may hold only some of them at once (pg_pool_take_read), so that slow reads never leave the
 * writers without one. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "pg_store.h"

/* Connections the reads leave to the writers (the executor threads and the sweeper), when the
 * pool has more than that. */
#define POOL_KEPT_FOR_WRITES (PG_WRITERS + 1)

int pg_pool_init(struct pg_pool *p, int n)
{
    p->conns = calloc((size_t)n, sizeof *p->conns);
    p->free_list = calloc((size_t)n, sizeof *p->free_list);
    if (!p->conns || !p->free_list) {
        free(p->conns);
        free(p->free_list);
        log_error("out of memory for %d connections", n);
        return -1;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->cancel_mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    p->n = p->nfree = n;
    p->reads = 0;
    p->reads_max = n > POOL_KEPT_FOR_WRITES ? n - POOL_KEPT_FOR_WRITES : 1;
    for (int i = 0; i < n; i++) {
        p->free_list[i] = i;
        p->conns[i].cancel_mu = &p->cancel_mu;
    }
    return 0;
}

void pg_pool_destroy(struct pg_pool *p)
{
    if (!p->conns)
        return;
    for (int i = 0; i < p->n; i++)
        pg_conn_close(&p->conns[i]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->cancel_mu);
    pthread_mutex_destroy(&p->mu);
    free(p->conns);
    free(p->free_list);
    p->conns = NULL;
}

/* 1 when a taker of this kind (read or not) must wait: no connection free, or the reads
 * hold their share. Under p->mu. */
static int pool_full(const struct pg_pool *p, int read)
{
    return p->nfree == 0 || (read && p->reads >= p->reads_max);
}

static void pool_give(struct pg_store *st, struct pg_conn *c, int read)
{
    struct pg_pool *p = &st->pool;
    pthread_mutex_lock(&p->mu);
    p->free_list[p->nfree++] = (int)(c - p->conns);
    if (read)
        p->reads--;
    /* Every waiter: a read waiter woken for a connection it may not take would swallow a
     * signal that a writer waits for. */
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static enum store_result pool_take(struct pg_store *st, struct pg_conn **out, int read)
{
    struct pg_pool *p = &st->pool;
    int64_t deadline = clock_mono_ms() + st->checkout_ms;
    struct timespec ts = {.tv_sec = deadline / 1000, .tv_nsec = (deadline % 1000) * 1000000};
    pthread_mutex_lock(&p->mu);
    while (pool_full(p, read) || atomic_load(&st->abandoned)) {
        if (atomic_load(&st->abandoned)) {
            pthread_mutex_unlock(&p->mu);
            return STORE_UNAVAILABLE;
        }
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT && pool_full(p, read)) {
            pthread_mutex_unlock(&p->mu);
            if (read)
                log_warn("postgresql: no connection free for a read within %lld ms (reads may "
                         "hold %d of --pool-size %d)",
                         (long long)st->checkout_ms, p->reads_max, p->n);
            else
                log_warn("postgresql: no free connection within %lld ms (--pool-size %d)",
                         (long long)st->checkout_ms, p->n);
            return STORE_BUSY;
        }
    }
    struct pg_conn *c = &p->conns[p->free_list[--p->nfree]];
    if (read)
        p->reads++;
    pthread_mutex_unlock(&p->mu);
    /* Read what an idle connection may have been told (a server closing it: a restart,
     * pg_terminate_backend): a dead one is found here, before anything is sent on it. */
    for (int k = 0; k < 4 && c->db && !c->bad; k++) {
        struct pollfd pfd = {.fd = PQsocket(c->db), .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0)
            break; /* nothing to read: alive as far as can be told */
        if (!PQconsumeInput(c->db))
            c->bad = 1; /* end of file: the server closed it */
    }
    if (!c->db || c->bad || PQstatus(c->db) != CONNECTION_OK) {
        enum store_result r = pg_conn_open(st, c);
        if (r == STORE_OK)
            r = pg_clock_sync(st, c);
        if (r != STORE_OK) {
            pg_conn_close(c);
            pool_give(st, c, read);
            return r;
        }
    }
    *out = c;
    return STORE_OK;
}

enum store_result pg_pool_take(struct pg_store *st, struct pg_conn **out)
{
    return pool_take(st, out, 0);
}

void pg_pool_give(struct pg_store *st, struct pg_conn *c)
{
    pool_give(st, c, 0);
}

enum store_result pg_pool_take_read(struct pg_store *st, struct pg_conn **out)
{
    return pool_take(st, out, 1);
}

void pg_pool_give_read(struct pg_store *st, struct pg_conn *c)
{
    pool_give(st, c, 1);
}

void pg_pool_abandon(struct pg_store *st)
{
    struct pg_pool *p = &st->pool;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv); /* waiters for a connection give up */
    pthread_mutex_unlock(&p->mu);
    int cancelled = 0;
    pthread_mutex_lock(&p->cancel_mu);
    for (int i = 0; i < p->n; i++) {
        char err[256];
        if (p->conns[i].cancel && PQcancel(p->conns[i].cancel, err, sizeof err))
            cancelled++; /* an idle connection ignores it */
    }
    pthread_mutex_unlock(&p->cancel_mu);
    log_warn("postgresql: abandoning the calls in progress (%d connections told to cancel)",
             cancelled);
}
