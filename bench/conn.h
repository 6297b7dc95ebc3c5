/* One blocking TCP connection to a server on this machine, with a read buffer, and the two
 * protocols the load generator speaks on it: keep-alive HTTP/1.1 (jobq) and beanstalkd's text
 * protocol.
 *
 * A connection belongs to one thread. Every call is bounded: a receive waits at most the
 * connection's timeout, and the sizes of what is read are capped by the buffer. Functions that
 * return int return 0 on success and -1 on failure, after writing why into c->err; after a
 * failure the connection is closed and the next call reconnects. */
#ifndef BENCH_CONN_H
#define BENCH_CONN_H

#include <stddef.h>

#define CONN_BUF (1 << 20) /* the largest response the generator accepts */

struct conn {
    char host[64];
    int port;
    int fd;
    int timeout_ms;    /* for every receive; long polls set it above their wait */
    const char *token; /* HTTP: sent as "Authorization: Bearer TOKEN" when not NULL (borrowed) */
    char *buf;         /* CONN_BUF bytes: [start, end) is received and not yet consumed */
    char *out;         /* CONN_BUF bytes: the request being sent */
    size_t start, end;
    char err[160];
};

/* Prepare c for host:port (nothing is connected yet). Returns 0, or -1 when out of memory. */
int conn_init(struct conn *c, const char *host, int port, int timeout_ms, const char *token);

/* Close c and release its buffer. Accepts a zeroed struct. This function can't fail. */
void conn_free(struct conn *c);

/* Close the socket only (the next call reconnects). This function can't fail. */
void conn_close(struct conn *c);

/* An HTTP response: status, and its body inside the connection's buffer, valid until the next
 * call on the connection. */
struct http_resp {
    int status;
    const char *body;
    size_t len;
};

/* Send one HTTP/1.1 request (JSON body of blen bytes when body is not NULL) and read its
 * response. Reconnects first if the connection is closed; a request that fails on a reused
 * connection before any byte of the answer arrived is sent once more on a new one (the server
 * may have closed an idle connection). Returns 0 with *r filled, or -1. */
int http_call(struct conn *c, const char *method, const char *path, const char *body, size_t blen,
              struct http_resp *r);

/* The same with the body's Content-Type ctype and more header lines (each "Name: value\r\n";
 * NULL: none), as the SQS driver sends them (bench/sqs.c). */
int http_call_as(struct conn *c, const char *method, const char *path, const char *ctype,
                 const char *headers, const char *body, size_t blen, struct http_resp *r);

/* Send len bytes (reconnecting first when closed). Returns 0 or -1. */
int conn_send(struct conn *c, const char *data, size_t len);

/* Read one line ending in "\r\n"; *line points at it inside the buffer (the CR LF replaced by
 * a NUL) until the next call. Returns its length without the CR LF, or -1. */
long conn_line(struct conn *c, char **line);

/* Read exactly n bytes followed by "\r\n" (a beanstalkd job body); *data points at them inside
 * the buffer until the next call. Returns 0 or -1. */
int conn_block(struct conn *c, size_t n, char **data);

#endif
