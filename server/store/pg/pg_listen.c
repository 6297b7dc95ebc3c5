/* The PostgreSQL store's listener: one dedicated connection per process (never pooled) that
 * LISTENs on the ready channel and turns other processes' notifications into on_ready hooks.
 * After a lost connection it connects again (backing off up to 2 s), LISTENs again and calls
 * on_lost, since notifications sent meanwhile are gone.
 *
 * It also sends this process's notifications: committed transactions hand it the queues they
 * made claimable (pg_listen_announce) and it sends them with one pg_notify statement per
 * NOTIFY_GAP_MS at most, on its own connection and outside any write transaction. A NOTIFY
 * inside a write transaction takes a database-wide lock from before that transaction's WAL
 * flush until its end, which serializes every notifying commit in the cluster; a NOTIFY
 * alone writes no WAL and holds it for an instant. A notification lost here (a crash after
 * the commit, a lost connection) only delays the other processes' parked claims until they
 * look again by themselves (waitq recheck). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pg_store.h"

#define LISTEN_POLL_MS 200 /* how often the thread looks at its stop flag */
#define LISTEN_BACKOFF_MAX_MS 2000
#define NOTIFY_GAP_MS 20  /* between two pg_notify statements of this process, at least */
#define RTT_PROBE_MS 1000 /* between two probes of the round trip (pg_rtt_record) */

struct pg_listener {
    pthread_t thread;
    atomic_int stop;
    struct pg_conn conn;
    pthread_mutex_t mu;
    struct store_news pending; /* under mu: queues to announce */
    int wake[2];               /* a pipe: a byte wakes the thread to announce */
    int64_t last_notify_ms;
    int64_t last_probe_ms;
};

void pg_listen_announce(struct pg_store *st, const struct store_news *n)
{
    struct pg_listener *l = st->listener;
    if (!l || (n->n == 0 && !n->all))
        return;
    pthread_mutex_lock(&l->mu);
    if (n->all)
        l->pending.all = 1;
    for (size_t i = 0; i < n->n; i++)
        store_news_ready(&l->pending, n->queues[i], 0);
    pthread_mutex_unlock(&l->mu);
    char b = 1;
    if (write(l->wake[1], &b, 1) < 0 && errno != EAGAIN)
        log_warn("postgresql: cannot wake the listener: %s", strerror(errno));
}

/* Send what is pending (the thread's own connection is up). Returns 0, or -1 when the
 * connection failed. */
static int announce_pending(struct pg_store *st, struct pg_listener *l)
{
    struct store_news n;
    pthread_mutex_lock(&l->mu);
    n = l->pending;
    memset(&l->pending, 0, sizeof l->pending);
    pthread_mutex_unlock(&l->mu);
    if (n.n == 0 && !n.all)
        return 0;
    struct pg_arr queues = {0};
    if (n.all)
        pg_arr_text(&queues, "*");
    for (size_t i = 0; !n.all && i < n.n; i++)
        pg_arr_text(&queues, n.queues[i]);
    char *list = pg_arr_take(&queues);
    int rc = 0;
    if (list) {
        const char *params[2] = {st->proc, list};
        enum store_result r;
        PGresult *res = pg_conn_exec(&l->conn, PG_NOTIFY, 2, params, "notify", &r);
        PQclear(res);
        rc = r == STORE_UNAVAILABLE ? -1 : 0;
        if (r == STORE_OK)
            atomic_fetch_add(&st->notes_sent, n.all ? 1 : n.n);
    }
    free(list);
    store_news_clear(&n);
    l->last_notify_ms = clock_mono_ms();
    return rc;
}

/* One notification: "PROC QUEUE". Ours were announced by the committing thread already. PROC
 * "lanes" is the lanes trigger's (pg_schema.c, migration 7: the end of a keyed job reopened
 * lanes of other queues), heard by every process, this one included. */
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
    atomic_fetch_add(&st->notes_heard, 1);
    if (strcmp(queue, "*") == 0) {
        if (h->on_lost)
            h->on_lost(h->ctx);
    } else if (h->on_ready) {
        h->on_ready(h->ctx, queue);
    }
}

/* Deliver the notifications libpq has read on the listening connection. */
static void deliver_all(struct pg_store *st, struct pg_listener *l)
{
    PGnotify *n;
    while ((n = PQnotifies(l->conn.db)) != NULL) {
        deliver(st, n->extra);
        PQfreemem(n);
    }
}

/* Time one round trip on the listening connection: an empty query, which the server answers
 * without parsing or planning anything, so the time is the link's and the two processes'.
 * Returns 0, or -1 when the connection failed or gave no answer within the statement
 * timeout. */
static int probe_rtt(struct pg_store *st, struct pg_listener *l)
{
    l->last_probe_ms = clock_mono_ms();
    int64_t t0 = clock_mono_us();
    if (!PQsendQuery(l->conn.db, "") || pg_await(&l->conn, l->last_probe_ms + st->statement_ms))
        return -1;
    int64_t t1 = clock_mono_us();
    int ok = 1;
    PGresult *res;
    while ((res = PQgetResult(l->conn.db)) != NULL) {
        ok &= PQresultStatus(res) == PGRES_EMPTY_QUERY;
        PQclear(res);
    }
    if (!ok)
        return -1;
    pg_rtt_record(st, t1 - t0);
    return 0;
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
        pthread_mutex_lock(&l->mu);
        int pending = l->pending.n > 0 || l->pending.all;
        pthread_mutex_unlock(&l->mu);
        int timeout = LISTEN_POLL_MS;
        if (pending) {
            int64_t gap = l->last_notify_ms + NOTIFY_GAP_MS - clock_mono_ms();
            timeout = gap > 0 ? (int)gap : 0;
        }
        struct pollfd pfd[2] = {{.fd = PQsocket(l->conn.db), .events = POLLIN},
                                {.fd = l->wake[0], .events = POLLIN}};
        int rc = poll(pfd, 2, timeout);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc > 0 && (pfd[1].revents & POLLIN)) {
            char buf[64];
            while (read(l->wake[0], buf, sizeof buf) > 0) {
            }
        }
        if (rc > 0 && (pfd[0].revents & POLLIN) && !PQconsumeInput(l->conn.db)) {
            log_warn("postgresql: the listening connection was lost; reconnecting");
            pg_conn_close(&l->conn);
            continue;
        }
        deliver_all(st, l);
        if (clock_mono_ms() >= l->last_notify_ms + NOTIFY_GAP_MS && announce_pending(st, l) != 0)
            pg_conn_close(&l->conn); /* the connection failed: connect again */
        else if (clock_mono_ms() >= l->last_probe_ms + RTT_PROBE_MS && probe_rtt(st, l) != 0)
            pg_conn_close(&l->conn);
        else
            deliver_all(st, l); /* what came during those exchanges: the socket is read already */
        if (l->conn.db && PQstatus(l->conn.db) != CONNECTION_OK) {
            log_warn("postgresql: the listening connection was lost; reconnecting");
            pg_conn_close(&l->conn);
        }
    }
    pg_conn_close(&l->conn);
    return NULL;
}

static void listener_free(struct pg_listener *l)
{
    store_news_clear(&l->pending);
    pthread_mutex_destroy(&l->mu);
    close(l->wake[0]);
    close(l->wake[1]);
    free(l);
}

int pg_listen_start(struct pg_store *st)
{
    struct pg_listener *l = calloc(1, sizeof *l);
    if (!l) {
        log_error("out of memory for the listener");
        return -1;
    }
    if (pipe2(l->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        log_error("cannot make the listener's pipe: %s", strerror(errno));
        free(l);
        return -1;
    }
    pthread_mutex_init(&l->mu, NULL);
    st->listener = l;
    int rc = pthread_create(&l->thread, NULL, listen_main, st);
    if (rc != 0) {
        log_error("cannot start the listener thread: %s", strerror(rc));
        listener_free(l);
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
    st->listener = NULL;
    listener_free(l);
}
