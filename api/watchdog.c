#include "watchdog.h"

#include <errno.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "log.h"

/* One connection known to the watchdog, from its STARTED to its CLOSED notification. The
 * links, clock and shut belong to the watchdog's mutex; seq is written by the connection's
 * libmicrohttpd thread without it. */
struct conn_rec {
    struct conn_rec *prev, *next;
    _Atomic uint32_t seq; /* odd while a request with complete headers runs (watchdog.h) */
    int fd;
    int shut; /* shut down already: libmicrohttpd will close and forget it */
    struct watchdog_clock clock;
};

struct watchdog {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* CLOCK_MONOTONIC; signalled to stop */
    pthread_t thread;
    int joinable;
    int stopping;
    int64_t timeout_ms;
    struct conn_rec *head;
};

int watchdog_step(struct watchdog_clock *c, uint32_t seq, int (*rx)(void *arg, uint64_t *n),
                  void *arg, int64_t now_ms, int64_t timeout_ms)
{
    uint64_t n;
    if (seq & 1u) {
        /* Headers complete: the request runs (a body, a parked long poll) untimed. */
        c->seen_seq = seq;
        c->started = 0;
        return 0;
    }
    if (seq != c->seen_seq) {
        /* A request finished since the last look: idle again, from what has arrived so far.
         * (Bytes of the next request that came within this tick start its clock only with
         * the next byte: at most one more pause of the client's.) */
        c->seen_seq = seq;
        c->started = 0;
        if (rx(arg, &n) == 0)
            c->rx_mark = n;
        return 0;
    }
    if (!c->started) {
        if (rx(arg, &n) != 0 || n <= c->rx_mark)
            return 0;
        c->started = 1;
        c->started_ms = now_ms;
        return 0;
    }
    return now_ms - c->started_ms > timeout_ms;
}

int watchdog_rx_bytes(int fd, uint64_t *n)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return -1;
    if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
        return -1;
    *n = ti.tcpi_bytes_received;
    return 0;
}

static int rx_of_fd(void *arg, uint64_t *n)
{
    return watchdog_rx_bytes(*(const int *)arg, n);
}

/* Shut r down: its peer and libmicrohttpd both see the end of the stream. */
static void shut_down(const struct watchdog *w, struct conn_rec *r)
{
    if (log_enabled(LOG_DEBUG)) {
        char host[NI_MAXHOST] = "?";
        struct sockaddr_storage a;
        socklen_t len = sizeof a;
        if (getpeername(r->fd, (struct sockaddr *)&a, &len) != 0 ||
            getnameinfo((struct sockaddr *)&a, len, host, sizeof host, NULL, 0, NI_NUMERICHOST))
            snprintf(host, sizeof host, "?");
        log_debug("closing a connection from %s: its request line and headers took more than "
                  "--header-timeout (%lld ms)",
                  host, (long long)w->timeout_ms);
    }
    /* ENOTCONN: the peer is gone already, and libmicrohttpd will notice by itself. */
    (void)shutdown(r->fd, SHUT_RDWR);
    r->shut = 1;
}

static void *watch_main(void *arg)
{
    struct watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        int64_t now = clock_mono_ms();
        for (struct conn_rec *r = w->head; r; r = r->next) {
            if (r->shut)
                continue;
            uint32_t seq = atomic_load(&r->seq);
            if (watchdog_step(&r->clock, seq, rx_of_fd, &r->fd, now, w->timeout_ms))
                shut_down(w, r);
        }
        int64_t until = now + WATCHDOG_TICK_MS;
        struct timespec ts = clock_ts_ms(until);
        int rc = 0;
        while (!w->stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w->wake, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct watchdog *watchdog_start(int64_t timeout_ms)
{
    struct watchdog *w = calloc(1, sizeof *w);
    if (!w) {
        log_error("out of memory starting the header-timeout watchdog");
        return NULL;
    }
    w->timeout_ms = timeout_ms;
    pthread_mutex_init(&w->mu, NULL);
    clock_cond_init(&w->wake);
    int rc = pthread_create(&w->thread, NULL, watch_main, w);
    if (rc != 0) {
        log_error("cannot start the header-timeout watchdog thread: %s", strerror(rc));
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    w->joinable = 1;
    return w;
}

void watchdog_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code)
{
    struct watchdog *w = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct conn_rec *r = ci ? calloc(1, sizeof *r) : NULL;
        if (!r) {
            /* The connection is served, only without a header deadline. */
            log_error("out of memory watching a new connection");
            return;
        }
        r->fd = ci->connect_fd;
        pthread_mutex_lock(&w->mu);
        r->next = w->head;
        if (w->head)
            w->head->prev = r;
        w->head = r;
        pthread_mutex_unlock(&w->mu);
        *socket_context = r;
        return;
    }
    struct conn_rec *r = *socket_context;
    if (code != MHD_CONNECTION_NOTIFY_CLOSED || !r)
        return;
    *socket_context = NULL;
    pthread_mutex_lock(&w->mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        w->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    pthread_mutex_unlock(&w->mu);
    free(r);
}

/* The connection's record, or NULL when the watchdog does not know it. */
static struct conn_rec *rec_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void watchdog_request_started(struct MHD_Connection *conn)
{
    struct conn_rec *r = rec_of(conn);
    if (r)
        atomic_fetch_add(&r->seq, 1);
}

void watchdog_request_done(struct MHD_Connection *conn)
{
    struct conn_rec *r = rec_of(conn);
    if (r)
        atomic_fetch_add(&r->seq, 1);
}

void watchdog_stop(struct watchdog *w)
{
    if (!w || !w->joinable)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    w->joinable = 0;
}

void watchdog_free(struct watchdog *w)
{
    if (!w)
        return;
    watchdog_stop(w);
    /* libmicrohttpd has forgotten every connection by now; free what it did not report. */
    while (w->head) {
        struct conn_rec *r = w->head;
        w->head = r->next;
        free(r);
    }
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
