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

int pg_pool_init(struct pg_pool *p, int n, int keep_for_writes, atomic_uint_fast64_t *trips)
{
    p->conns = calloc((size_t)n, sizeof *p->conns);
    p->free_list = calloc((size_t)n, sizeof *p->free_list);
    if (!p->conns || !p->free_list) {
        free(p->conns);
        free(p->free_list);
        log_error("out of memory for %d connections", n);
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->cancel_mu, NULL);
    clock_cond_init(&p->cv);
    p->n = p->nfree = n;
    p->reads = 0;
    p->reads_max = n > keep_for_writes ? n - keep_for_writes : 1;
    p->open = 0;
    p->grow_after_ms = 0;
    for (int i = 0; i < n; i++) {
        p->free_list[i] = n - 1 - i; /* taken from the end: conns[0] first */
        p->conns[i].cancel_mu = &p->cancel_mu;
        p->conns[i].trips = trips;
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

/* How long a connect that failed while others were open keeps takers to the open ones. */
#define POOL_GROW_PAUSE_MS 1000

static int usable(const struct pg_conn *c)
{
    return c->db && !c->bad;
}

/* The index in p->free_list of the connection to take: the last one given back, or while the
 * pool may not grow, the last given back that is connected; -1 when none may be taken. Under
 * p->mu. */
static int pick(const struct pg_pool *p, int read, int64_t now_ms)
{
    if (p->nfree == 0 || (read && p->reads >= p->reads_max))
        return -1;
    if (now_ms >= p->grow_after_ms)
        return p->nfree - 1;
    for (int i = p->nfree - 1; i >= 0; i--) {
        if (usable(&p->conns[p->free_list[i]]))
            return i;
    }
    return -1;
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

/* Connect c (taken, not usable). Returns STORE_OK, or the failure with c given back; *again is
 * set when the caller should wait for an open connection instead (others are open). */
static enum store_result connect_taken(struct pg_store *st, struct pg_conn *c, int read, int *again)
{
    struct pg_pool *p = &st->pool;
    int was_open = c->db != NULL;
    enum store_result r = pg_conn_open(st, c);
    if (r == STORE_OK)
        r = pg_clock_sync(st, c);
    if (r != STORE_OK)
        pg_conn_close(c);
    pthread_mutex_lock(&p->mu);
    p->open += (r == STORE_OK) - was_open;
    *again = r == STORE_UNAVAILABLE && p->open > 0 && !atomic_load(&st->abandoned);
    if (*again)
        p->grow_after_ms = clock_mono_ms() + POOL_GROW_PAUSE_MS;
    pthread_mutex_unlock(&p->mu);
    if (r != STORE_OK)
        pool_give(st, c, read);
    return r;
}

static enum store_result pool_take(struct pg_store *st, struct pg_conn **out, int read)
{
    struct pg_pool *p = &st->pool;
    int64_t deadline = clock_mono_ms() + st->checkout_ms;
    struct timespec ts = clock_ts_ms(deadline);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int i;
        while ((i = pick(p, read, clock_mono_ms())) < 0 || atomic_load(&st->abandoned)) {
            if (atomic_load(&st->abandoned)) {
                pthread_mutex_unlock(&p->mu);
                return STORE_UNAVAILABLE;
            }
            /* While the pool may not grow, look again when that ends. */
            struct timespec until = ts;
            int64_t grow = p->grow_after_ms;
            if (p->nfree > 0 && grow > clock_mono_ms() && grow < deadline)
                until = clock_ts_ms(grow);
            if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT &&
                clock_mono_ms() >= deadline && pick(p, read, clock_mono_ms()) < 0) {
                pthread_mutex_unlock(&p->mu);
                if (read)
                    log_warn("postgresql: no connection free for a read within %lld ms (reads "
                             "may hold %d of --pool-size %d)",
                             (long long)st->checkout_ms, p->reads_max, p->n);
                else
                    log_warn("postgresql: no free connection within %lld ms (--pool-size %d)",
                             (long long)st->checkout_ms, p->n);
                return STORE_BUSY;
            }
        }
        struct pg_conn *c = &p->conns[p->free_list[i]];
        p->free_list[i] = p->free_list[--p->nfree];
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
        if (!usable(c) || PQstatus(c->db) != CONNECTION_OK) {
            int again = 0;
            enum store_result r = connect_taken(st, c, read, &again);
            if (r != STORE_OK && again && clock_mono_ms() < deadline)
                continue; /* wait for one of the open connections */
            if (r != STORE_OK)
                return r;
        }
        *out = c;
        return STORE_OK;
    }
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
