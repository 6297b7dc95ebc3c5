/* The pool of read connections of the SQLite store. Reads run on them (query_only, WAL) and
 * never wait for the writer; a reader waits only for a free connection. */
#ifndef JOBQ_SQLITE_POOL_H
#define JOBQ_SQLITE_POOL_H

#include <pthread.h>

#include "sqlite_conn.h"

struct sqlite_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct sqlite_conn *conns;
    int n;
    int *idle; /* indexes of the free connections, a stack */
    int nidle;
};

/* Open n (>= 1) prepared read connections on path. The schema must already exist.
 * Returns 0, or -1 after logging why (nothing left open). */
int sqlite_pool_open(struct sqlite_pool *p, const char *path, int n);

/* Close every connection of a pool that sqlite_pool_open() opened. None may be taken. */
void sqlite_pool_close(struct sqlite_pool *p);

#define SQLITE_POOL_WAIT_MS 5000 /* for a free read connection, at most */

/* Take a free read connection, waiting up to SQLITE_POOL_WAIT_MS for one when all are taken.
 * NULL (logged) when none came free in time: the read answers STORE_BUSY. */
struct sqlite_conn *sqlite_pool_take(struct sqlite_pool *p);

/* Give back a connection taken from p. */
void sqlite_pool_give(struct sqlite_pool *p, struct sqlite_conn *c);

#endif
