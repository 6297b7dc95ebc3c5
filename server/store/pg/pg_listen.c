/* The PostgreSQL store's listener: one dedicated connection per process (never pooled) that
 * LISTENs on the ready channel and turns other processes' notifications into on_ready hooks.
 * After a lost connection it connects again (backing off up to 2 s), LISTENs again and calls
 * on_lost, since notifications sent meanwhile are gone. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pg_store.h"

#define LISTEN_POLL_MS 200 /* how often the thread looks at its stop flag */
#define LISTEN_BACKOFF_MAX_MS 2000

struct pg_listener {
    pthread_t thread;
    atomic_int stop;
    struct pg_conn conn;
};

/* One notification: "PROC QUEUE". Ours were announced by the committing thread already. */
static void deliver(struct pg_store *st, const char *payload)
{
    const char *space = strchr(payload, ' ');
    if (!space)
        return;
    size_t plen = (size_t)(space - payload);
    if (plen == strlen(st->proc) && strncmp(payload, st->proc, plen) == 0)
        return;
    const char *queue = space + 1;
    const struct store_hooks *h = &st->hooks;
    if (strcmp(queue, "*") == 0) {
        if (h->on_lost)
            h->on_lost(h->ctx);
    } else if (h->on_ready) {
        h->on_ready(h->ctx, queue);
    }
}

static int listen_on(struct pg_store *st, struct pg_listener *l)
{
    if (pg_conn_open(st, &l->conn) != STORE_OK)
        return -1;
    if (pg_command(&l->conn, "LISTEN " PG_NOTIFY_CHANNEL, "listen") != STORE_OK) {
        pg_conn_close(&l->conn);
        return -1;
    }
    return 0;
}

/* Wait up to ms for stop. Returns 1 when stop was asked. */
static int nap(struct pg_listener *l, int ms)
{
    for (int waited = 0; waited < ms; waited += LISTEN_POLL_MS) {
        if (atomic_load(&l->stop))
            return 1;
        poll(NULL, 0, LISTEN_POLL_MS);
    }
    return atomic_load(&l->stop);
}

static void *listen_main(void *arg)
{
    struct pg_store *st = arg;
    struct pg_listener *l = st->listener;
    int backoff = 100;
    while (!atomic_load(&l->stop)) {
        if (!l->conn.db) {
            if (listen_on(st, l) != 0) {
                if (nap(l, backoff))
                    break;
                backoff = backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : backoff * 2;
                continue;
            }
            backoff = 100;
            log_info("postgresql: listening for other processes' jobs");
            if (st->hooks.on_lost)
                st->hooks.on_lost(st->hooks.ctx); /* what was sent while we were away */
        }
        struct pollfd pfd = {.fd = PQsocket(l->conn.db), .events = POLLIN};
        int rc = poll(&pfd, 1, LISTEN_POLL_MS);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc > 0 && !PQconsumeInput(l->conn.db)) {
            log_warn("postgresql: the listening connection was lost; reconnecting");
            pg_conn_close(&l->conn);
            continue;
        }
        PGnotify *n;
        while ((n = PQnotifies(l->conn.db)) != NULL) {
            deliver(st, n->extra);
            PQfreemem(n);
        }
        if (PQstatus(l->conn.db) != CONNECTION_OK) {
            log_warn("postgresql: the listening connection was lost; reconnecting");
            pg_conn_close(&l->conn);
        }
    }
    pg_conn_close(&l->conn);
    return NULL;
}

int pg_listen_start(struct pg_store *st)
{
    struct pg_listener *l = calloc(1, sizeof *l);
    if (!l) {
        log_error("out of memory for the listener");
        return -1;
    }
    st->listener = l;
    int rc = pthread_create(&l->thread, NULL, listen_main, st);
    if (rc != 0) {
        log_error("cannot start the listener thread: %s", strerror(rc));
        free(l);
        st->listener = NULL;
        return -1;
    }
    return 0;
}

void pg_listen_stop(struct pg_store *st)
{
    struct pg_listener *l = st->listener;
    if (!l)
        return;
    atomic_store(&l->stop, 1);
    pthread_join(l->thread, NULL);
    free(l);
    st->listener = NULL;
}
