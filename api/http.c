#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "app.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "rand.h"
#include "reply.h"
#include "request.h"
#include "router.h"
#include "sse.h"
#include "tls.h"
#include "watchdog.h"
#include "workers.h"

/* Headers and URL of one request must fit in this much per-connection memory (about half
 * of it: the rest buffers I/O). libmicrohttpd zeroes the whole pool for every request on a
 * keep-alive connection, so it is kept small: 64 KiB cost about 3 us of CPU per request. */
#define CONN_MEMORY_LIMIT (16 * 1024)
/* A body past --max-body-bytes is drained (to answer 413 on a clean connection) up to this
 * many more bytes; past that the connection is closed without an answer. */
#define DRAIN_LIMIT (64LL * 1024 * 1024)
/* What the access log shows of a path at most. */
#define LOG_PATH_MAX 200
/* Store reads waiting for a reader thread, per --threads, at most (then 503). */
#define READ_QUEUE_PER_THREAD 64

struct http_server {
    struct MHD_Daemon *daemon;
    struct app *app;
    struct http_front front;
    int port;
    struct tls_pem tls;   /* empty without TLS */
    struct watchdog *wd;  /* --header-timeout (watchdog.h) */
    MHD_socket listen_fd; /* returned by MHD_quiesce_daemon(); ours to close after stop */
    int quiesced;
    pthread_mutex_t mu;
    pthread_cond_t idle; /* CLOCK_MONOTONIC; signalled when inflight drops to 0 */
    long inflight;       /* requests between their first call and their completion */
};

static void inflight_add(struct http_server *h, long d)
{
    pthread_mutex_lock(&h->mu);
    h->inflight += d;
    if (h->inflight == 0)
        pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_warn("libmicrohttpd: %s", msg);
}

/* 1 when the Content-Length header announces more than max bytes. */
static int announced_too_large(struct MHD_Connection *conn, int64_t max)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return 0;
    int64_t v = 0;
    for (const char *p = cl; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > max)
            return 1;
    }
    return 0;
}

/* 1 when the client sent "Expect: 100-continue" and waits before sending its body. */
static int expects_continue(struct MHD_Connection *conn)
{
    const char *e = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    return e && strncasecmp(e, "100-continue", 12) == 0;
}

/* 1 when the Content-Type is absent or its media type is application/json (any parameters,
 * any case). */
static int content_type_ok(struct MHD_Connection *conn)
{
    const char *ct =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return 1;
    static const char json[] = "application/json";
    ct += strspn(ct, " \t");
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == sizeof json - 1 && strncasecmp(ct, json, n) == 0;
}

/* Append upload data to rq->body (NUL-terminated, grown geometrically) up to max bytes; past
 * that, mark the request too large, drop the body and count what is drained in body_len.
 * The body of a refused request (rq->denied) is only counted, up to max bytes.
 * Returns 0, or -1 when the connection should be closed (out of memory, endless body). */
static int take_upload(struct request *rq, const char *data, size_t n, int64_t max)
{
    if (rq->denied) {
        rq->body_len += n;
        if ((int64_t)rq->body_len > max) {
            log_debug("closing %s %s: a refused request with a body larger than %lld bytes",
                      rq->method, rq->url, (long long)max);
            return -1;
        }
        return 0;
    }
    if (rq->too_large) {
        rq->body_len += n;
        if ((int64_t)rq->body_len > DRAIN_LIMIT) {
            log_info("closing %s %s: body larger than %lld bytes", rq->method, rq->url,
                     (long long)(max + DRAIN_LIMIT));
            return -1;
        }
        return 0;
    }
    if ((int64_t)rq->body_len + (int64_t)n > max) {
        rq->too_large = 1;
        free(rq->body);
        rq->body = NULL;
        rq->body_cap = 0;
        rq->body_len = n;
        return 0;
    }
    size_t need = rq->body_len + n + 1;
    if (need > rq->body_cap) {
        size_t cap = rq->body_cap ? rq->body_cap : 4096;
        while (cap < need)
            cap *= 2;
        if (cap > (size_t)max + 1)
            cap = (size_t)max + 1;
        char *p = realloc(rq->body, cap);
        if (!p) {
            log_error("out of memory reading a %zu-byte body of %s %s", need, rq->method, rq->url);
            return -1;
        }
        rq->body = p;
        rq->body_cap = cap;
    }
    memcpy(rq->body + rq->body_len, data, n);
    rq->body_len += n;
    rq->body[rq->body_len] = '\0';
    return 0;
}

/* The request's X-Request-Id: the client's when it is 1-REQUEST_ID_MAX characters of
 * A-Z a-z 0-9 - _ ., else a new random one (16 URL-safe characters). */
static void set_request_id(struct request *rq)
{
    const char *given = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Request-Id");
    size_t n = given ? strlen(given) : 0;
    int ok = n >= 1 && n <= REQUEST_ID_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = given[i];
        ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
             ch == '-' || ch == '_' || ch == '.';
    }
    if (ok) {
        memcpy(rq->request_id, given, n + 1);
        return;
    }
    char token[JOB_TOKEN_LEN + 1];
    if (rand_token(token) != 0)
        snprintf(token, sizeof token, "%016llx", (unsigned long long)rq->started_us);
    snprintf(rq->request_id, sizeof rq->request_id, "%.16s", token);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    struct http_server *h = cls;
    int64_t max = h->app->cfg->max_body_bytes;
    struct request *rq = *req_cls;

    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq) {
            log_error("out of memory for a request");
            return MHD_NO;
        }
        rq->conn = conn;
        rq->app = h->app;
        rq->method = method;
        rq->url = url;
        rq->started_us = clock_mono_us();
        set_request_id(rq);
        *req_cls = rq;
        inflight_add(h, 1);
        watchdog_request_started(conn); /* the headers are in */
        if (h->front.serve) {
            /* A front end of its own decides everything once the body is in, or at once
             * when the client waits for "100 Continue" with a body that is too large. */
            rq->too_large = announced_too_large(conn, max);
            if (rq->too_large &&
                (expects_continue(conn) || announced_too_large(conn, max + DRAIN_LIMIT)))
                return h->front.serve(rq);
            return MHD_YES;
        }
        if (access_check(rq) != ACCESS_OK) {
            /* Refused on its headers (access.h). Answer at once when the client waits for
             * "100 Continue" or announces a body we would not read; else read the body away
             * (dropping it) and answer then, so that the client sees the 401 or 403 rather
             * than a reset connection. */
            if (expects_continue(conn) || announced_too_large(conn, max))
                return access_reply_denied(rq);
            return MHD_YES;
        }
        if (announced_too_large(conn, max)) {
            /* Answer at once when the client waits for "100 Continue" or announces more than
             * we would drain; else read the body away first, so that a client that sends
             * before it reads (most do) gets the 413 instead of a broken pipe. */
            rq->too_large = 1;
            if (expects_continue(conn) || announced_too_large(conn, max + DRAIN_LIMIT))
                return reply_error(rq, ERR_PAYLOAD_TOO_LARGE,
                                   "the request body is larger than %lld bytes", (long long)max);
        }
        return MHD_YES;
    }

    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->answered)
            return MHD_YES;
        return take_upload(rq, upload_data, n, max) == 0 ? MHD_YES : MHD_NO;
    }

    /* The upload is complete (or this is a resumed long poll). */
    if (rq->answered)
        return MHD_YES;
    if (h->front.serve)
        return h->front.serve(rq);
    if (rq->denied)
        return access_reply_denied(rq);
    if (rq->too_large)
        return reply_error(rq, ERR_PAYLOAD_TOO_LARGE, "the request body is larger than %lld bytes",
                           (long long)max);
    if (rq->body_len > 0 && !content_type_ok(conn))
        return reply_error(rq, ERR_UNSUPPORTED_MEDIA, "the request body must be application/json");
    enum MHD_Result r = router_dispatch(rq);
    if (r == MHD_YES && !rq->answered && !rq->state) {
        /* Neither answered nor parked: libmicrohttpd would call us again and again. */
        log_error("handler for %s %s returned without an answer", rq->method, rq->url);
        return reply_error(rq, ERR_INTERNAL, NULL);
    }
    return r;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* libmicrohttpd's unescape callback for the path and query arguments: decode %HH in place,
 * except %00, which stays as the three characters "%00". Decoded, it would end the C string
 * and /jobs/1%00 would be served as /jobs/1; kept, it fails routing (404) or validation (400).
 * Returns the new length. */
static size_t unescape_keep_nul(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    char *out = s;
    for (const char *in = s; *in; out++) {
        int hi = in[0] == '%' ? hex_value(in[1]) : -1;
        int lo = hi >= 0 ? hex_value(in[2]) : -1;
        if (lo >= 0 && (hi | lo) != 0) {
            *out = (char)(hi * 16 + lo);
            in += 3;
        } else {
            *out = *in++;
        }
    }
    *out = '\0';
    return (size_t)(out - s);
}

/* Copy at most LOG_PATH_MAX bytes of s into out with control bytes made '?', so that a path
 * cannot forge log lines. */
static void log_safe(char *out, size_t size, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[i] = '\0';
}

static const char *termination_name(enum MHD_RequestTerminationCode toe)
{
    switch (toe) {
    case MHD_REQUEST_TERMINATED_COMPLETED_OK:
        return "";
    case MHD_REQUEST_TERMINATED_WITH_ERROR:
        return "connection error";
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
        return "timed out";
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
        return "server stopping";
    case MHD_REQUEST_TERMINATED_READ_ERROR:
        return "client went away";
    case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
        return "client aborted";
    default:
        return "terminated";
    }
}

/* The completion callback: one access-log line (at info level, or debug with
 * --access-log=off: under load, workers claiming and heartbeating, one info line per request
 * can dominate the log), the metrics, then the request's memory. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    struct http_server *h = cls;
    struct request *rq = *req_cls;
    if (!rq)
        return;
    *req_cls = NULL;
    watchdog_request_done(conn);
    int64_t us = clock_mono_us() - rq->started_us;
    if (log_enabled(log_request_level())) {
        char method[16], path[LOG_PATH_MAX + 1];
        log_safe(method, sizeof method, rq->method);
        log_safe(path, sizeof path, rq->url);
        struct log_request line = {method, path,           rq->status,           rq->bytes,
                                   us,     rq->request_id, termination_name(toe)};
        log_request(&line);
    }
    size_t route = rq->route ? (size_t)(rq->route - router_table) : router_table_len;
    metrics_request_done(route, (unsigned)rq->status, us);
    if (rq->state_free)
        rq->state_free(rq->state);
    free(rq->body);
    free(rq);
    inflight_add(h, -1);
}

/* Resolve host:port into addr (the first address getaddrinfo() gives). Returns 0, or -1. */
static int resolve(const char *host, int port, struct sockaddr_storage *addr)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        log_error("cannot listen on %s: %s", host, rc ? gai_strerror(rc) : "no address");
        return -1;
    }
    memset(addr, 0, sizeof *addr);
    if (res->ai_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)(void *)addr;
        memcpy(a, res->ai_addr, sizeof *a);
        a->sin6_port = htons((uint16_t)port);
    } else if (res->ai_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)(void *)addr;
        memcpy(a, res->ai_addr, sizeof *a);
        a->sin_port = htons((uint16_t)port);
    } else {
        freeaddrinfo(res);
        log_error("cannot listen on %s: not an IPv4 or IPv6 address", host);
        return -1;
    }
    freeaddrinfo(res);
    return 0;
}

/* Each connection is a descriptor: make sure the soft limit allows max_connections of them
 * plus the database and a margin, raising it up to the hard limit. */
static void raise_fd_limit(int max_connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_connections + 128;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rlim_t old = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        log_warn("open files limited to %llu (was %llu): fewer than --max-connections %d",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)old, max_connections);
}

struct http_server *http_start(struct app *app, const struct http_front *front)
{
    const struct config *cfg = app->cfg;
    struct sockaddr_storage addr;
    if (resolve(front->host, front->port, &addr) != 0)
        return NULL;
    raise_fd_limit(cfg->max_connections);

    struct http_server *h = calloc(1, sizeof *h);
    if (!h) {
        log_error("out of memory starting the HTTP server");
        return NULL;
    }
    h->app = app;
    h->front = *front;
    h->listen_fd = MHD_INVALID_SOCKET;
    int use_tls = cfg->tls_cert[0] != '\0';
    if (use_tls && tls_load(cfg->tls_cert, cfg->tls_key, &h->tls) != 0) {
        free(h);
        return NULL;
    }
    h->wd = watchdog_start(cfg->header_timeout * 1000);
    /* As many readers as HTTP threads: reads run as many at a time as when they ran on
     * those threads, but no longer hold them. */
    app->readers =
        h->wd ? workers_start(cfg->threads, (size_t)cfg->threads * READ_QUEUE_PER_THREAD, "reads")
              : NULL;
    app->streams = app->readers ? sse_hub_start(app, cfg->events_streams) : NULL;
    if (!app->streams) {
        workers_stop(app->readers);
        app->readers = NULL;
    }
    if (!app->readers) {
        watchdog_free(h->wd);
        tls_clear(&h->tls);
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    clock_cond_init(&h->idle);

    /* libmicrohttpd sets SO_REUSEADDR on the listening socket by default (and, unlike
     * MHD_OPTION_LISTENING_ADDRESS_REUSE, not SO_REUSEPORT: a second jobqd cannot share the
     * port). ALLOW_SUSPEND_RESUME brings the inter-thread channel that quiesce needs. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    /* epoll only with one thread: with a pool, MHD_quiesce_daemon() (0.9.75) takes the
     * listening socket out of each worker's epoll set while the worker may be doing the same,
     * and panics (abort) when it loses that race (ENOENT). poll quiesces through the
     * inter-thread channel instead. */
    int epoll = cfg->threads <= 1 && MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES;
    flags |= epoll ? MHD_USE_EPOLL : MHD_USE_POLL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (use_tls)
        flags |= MHD_USE_TLS;
    /* One thread is the daemon's own polling thread: a pool option of 1 (or 0) draws a
     * warning, so it is given only for more (an array that starts with END is empty). */
    struct MHD_OptionItem pool[] = {
        {cfg->threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, cfg->threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    /* The same trick for TLS: GnuTLS copies the PEM text when the daemon starts. */
    struct MHD_OptionItem tls_opts[] = {
        {use_tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->tls.cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls.key},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };
    /* clang-format off */
    h->daemon = MHD_start_daemon(flags, (uint16_t)front->port, NULL, NULL, on_request, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_ARRAY, pool,
        MHD_OPTION_ARRAY, tls_opts,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, watchdog_on_connection, h->wd,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_keep_nul, NULL,
        MHD_OPTION_END);
    /* clang-format on */
    if (!h->daemon) {
        int v6 = strchr(front->host, ':') != NULL;
        log_error("cannot listen on %s%s%s:%d%s (the reason is logged above)", v6 ? "[" : "",
                  front->host, v6 ? "]" : "", front->port,
                  use_tls ? " with TLS: address in use, or a bad certificate or key" : "");
        tls_clear(&h->tls);
        watchdog_free(h->wd);
        sse_hub_stop(app->streams);
        app->streams = NULL;
        workers_stop(app->readers);
        app->readers = NULL;
        pthread_cond_destroy(&h->idle);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info && info->port ? info->port : front->port;
    return h;
}

void http_quiesce(struct http_server *h)
{
    if (!h || h->quiesced)
        return;
    h->listen_fd = MHD_quiesce_daemon(h->daemon);
    h->quiesced = 1;
    sse_hub_close(h->app->streams); /* streams never end by themselves: end them */
    pthread_mutex_lock(&h->mu);
    long n = h->inflight;
    pthread_mutex_unlock(&h->mu);
    log_info("stopped accepting connections; %ld request%s in flight", n, n == 1 ? "" : "s");
}

/* Wait until *count (read under h->mu for inflight, atomically for store calls) is 0 or
 * timeout_ms passed. Returns what is left. */
static long wait_zero(struct http_server *h, int timeout_ms, int store_calls)
{
    int64_t deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    struct timespec ts = clock_ts_ms(deadline);
    long left;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        left = store_calls ? atomic_load(&h->app->store_calls) : h->inflight;
        if (left <= 0)
            break;
        if (store_calls) { /* no signal for it: look again every 20 ms */
            int64_t now = clock_mono_ms();
            if (now >= deadline)
                break;
            int64_t next = now + 20 < deadline ? now + 20 : deadline;
            struct timespec nts = clock_ts_ms(next);
            pthread_cond_timedwait(&h->idle, &h->mu, &nts);
        } else if (pthread_cond_timedwait(&h->idle, &h->mu, &ts) == ETIMEDOUT) {
            left = h->inflight;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return left;
}

long http_drain(struct http_server *h, int timeout_ms)
{
    if (!h)
        return 0;
    http_quiesce(h);
    long left = wait_zero(h, timeout_ms, 0);
    if (left > 0)
        log_warn("%ld request%s still in flight after %d ms", left, left == 1 ? "" : "s",
                 timeout_ms);
    return left;
}

int http_stop(struct http_server *h, int timeout_ms)
{
    if (!h)
        return 0;
    http_quiesce(h);
    atomic_store(&h->app->refuse_calls, 1);
    workers_abandon(h->app->readers); /* reads not started yet answer 503 now */
    long calls = wait_zero(h, timeout_ms, 1);
    if (calls > 0) {
        log_error("%ld store call%s still in progress after %d ms: their connections stay "
                  "suspended, so the server is left as it is",
                  calls, calls == 1 ? "" : "s", timeout_ms);
        return -1;
    }
    watchdog_stop(h->wd); /* no shutdown() while libmicrohttpd closes everything */
    MHD_stop_daemon(h->daemon);
    sse_hub_stop(h->app->streams);
    h->app->streams = NULL;
    workers_stop(h->app->readers);
    h->app->readers = NULL;
    watchdog_free(h->wd);
    if (h->listen_fd != MHD_INVALID_SOCKET)
        close(h->listen_fd);
    tls_clear(&h->tls);
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->mu);
    free(h);
    return 0;
}

int http_port(const struct http_server *h)
{
    return h ? h->port : 0;
}
