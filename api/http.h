/* The HTTP server: libmicrohttpd with an internal epoll thread pool and suspend/resume for
 * long polls, HTTPS with --tls-cert/--tls-key (tls.h). On the first access-handler call (the
 * headers) access_check() decides 401/403 (access.h): a refused request's body is read and
 * dropped, up to --max-body-bytes, and then answered. Per-request memory is allocated on the
 * first access-handler call, bodies accumulate up to --max-body-bytes (past it: drain, then
 * 413; a Content-Length over it: 413 at once), a non-empty body whose Content-Type is not
 * application/json gets 415, and everything else goes to router_dispatch() once the body is
 * complete (again when a parked claim or a store call is resumed). Store reads run on reader
 * threads of their own, as many as --threads, with at most 64 per thread waiting (past that a
 * read answers 503 at once): a slow read never holds a thread that answers. One access-log
 * line per request (debug level) and metrics_request_done() from the completion callback,
 * which also calls rq->state_free(rq->state) and frees the request. */
#ifndef JOBQ_HTTP_H
#define JOBQ_HTTP_H

#include <microhttpd.h>

struct app;
struct http_server;
struct request;

/* What one listener serves. */
struct http_front {
    const char *host; /* a name, IPv4 or IPv6 address; borrowed for the server's lifetime */
    int port;         /* 0: a free one (http_port) */
    /* NULL: the native API (access_check, the Content-Type check, router_dispatch). Else the
     * front end of its own that every request goes to once its body is in, or at once when
     * its announced body is too large to read (rq->too_large set in both cases: the answer is
     * then the front end's 413). It must answer (or park, or return MHD_NO). */
    enum MHD_Result (*serve)(struct request *rq);
};

/* Start listening on front->host:port (a name, IPv4 or IPv6 address; port 0
 * binds a free port, see http_port()), with TLS when app->cfg->tls_cert is set, limiting
 * connections to --max-connections in all and --max-connections-per-ip from one address,
 * closing those idle for --idle-timeout, and those whose request line and headers take longer
 * than --header-timeout from their first byte (watchdog.h). Raises the open-files limit towards
 * --max-connections. Borrows app for the server's lifetime and starts its readers
 * (app->readers). Returns NULL after logging why (address in use, bad host, unreadable or
 * invalid certificate or key). */
struct http_server *http_start(struct app *app, const struct http_front *front);

/* Graceful stop, part one: stop accepting new connections; requests in flight and open
 * keep-alive connections go on. Idempotent; accepts NULL. */
void http_quiesce(struct http_server *h);

/* Part two: wait up to timeout_ms for requests in flight to finish (quiescing first if that
 * was not done). Returns how many are still in flight. Accepts NULL (0). */
long http_drain(struct http_server *h, int timeout_ms);

/* Part three: refuse new store calls (they end STORE_UNAVAILABLE: 503, and so do the reads
 * still waiting for a reader thread), wait up to timeout_ms for those in progress, then stop
 * the daemon (closing what is left, logged) and free h: returns 0. Parked long polls must
 * have been woken first (waitq_shutdown). libmicrohttpd must not be stopped with a connection
 * suspended, so when store calls are still in progress after timeout_ms, h is left running
 * and -1 is returned: the caller must then exit without freeing anything those calls use (the
 * store, the app). Accepts NULL (0). */
int http_stop(struct http_server *h, int timeout_ms);

/* The port actually bound (useful with port 0). */
int http_port(const struct http_server *h);

#endif
