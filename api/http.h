/* The HTTP server: libmicrohttpd with an internal epoll thread pool and suspend/resume for
 * long polls. Per-request memory is allocated on the first access-handler call, bodies
 * accumulate up to --max-body-bytes (past it: drain, then 413), one access-log line per
 * request from the completion callback. */
#ifndef JOBQ_HTTP_H
#define JOBQ_HTTP_H

struct app;
struct http_server;

/* Start listening on app->cfg->listen_host:listen_port. Borrows app for the server's
 * lifetime. Returns NULL after logging why (address in use, bad host). */
struct http_server *http_start(struct app *app);

/* Graceful stop, part one: stop accepting new connections. */
void http_quiesce(struct http_server *h);

/* Part two: wait up to timeout_ms for requests in flight to finish, then stop the daemon
 * and free h. Parked long polls must have been woken first (waitq_shutdown). Accepts NULL. */
void http_stop(struct http_server *h, int timeout_ms);

/* The port actually bound (useful with port 0). */
int http_port(const struct http_server *h);

#endif
