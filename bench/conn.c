#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX (16 * 1024) /* request line and headers we send at most */

int conn_init(struct conn *c, const char *host, int port, int timeout_ms, const char *token)
{
    memset(c, 0, sizeof *c);
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    c->token = token;
    c->buf = malloc(CONN_BUF);
    c->out = malloc(CONN_BUF);
    return c->buf && c->out ? 0 : -1;
}

void conn_close(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->start = c->end = 0;
}

void conn_free(struct conn *c)
{
    if (!c)
        return;
    conn_close(c);
    free(c->buf);
    free(c->out);
    c->buf = c->out = NULL;
}

static int fail(struct conn *c, const char *what, int err)
{
    snprintf(c->err, sizeof c->err, "%s %s:%d: %s", what, c->host, c->port,
             err ? strerror(err) : "protocol error");
    conn_close(c);
    return -1;
}

static int dial(struct conn *c)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)c->port);
    if (inet_pton(AF_INET, c->host, &sa.sin_addr) != 1)
        return fail(c, "bad address", EINVAL);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return fail(c, "socket", errno);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        return fail(c, "connect", errno);
    c->start = c->end = 0;
    return 0;
}

int conn_send(struct conn *c, const char *data, size_t len)
{
    if (c->fd < 0 && dial(c) != 0)
        return -1;
    while (len > 0) {
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail(c, "send to", n < 0 ? errno : EPIPE);
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Receive more bytes into the buffer. Returns the count, 0 at end of stream, or -1. */
static long fill(struct conn *c)
{
    if (c->start > 0 && c->start == c->end)
        c->start = c->end = 0;
    if (c->end == CONN_BUF && c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
    }
    if (c->end == CONN_BUF)
        return fail(c, "answer too large from", EMSGSIZE);
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, c->timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return fail(c, "timed out waiting for", ETIMEDOUT);
        if (r < 0)
            return fail(c, "poll", errno);
        ssize_t n = recv(c->fd, c->buf + c->end, CONN_BUF - c->end, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(c, "recv from", errno);
        c->end += (size_t)n;
        return (long)n;
    }
}

long conn_line(struct conn *c, char **line)
{
    if (c->fd < 0)
        return fail(c, "not connected to", ENOTCONN);
    size_t scanned = c->start;
    for (;;) {
        char *p = memchr(c->buf + scanned, '\n', c->end - scanned);
        if (p) {
            char *s = c->buf + c->start;
            long len = p - s;
            if (len > 0 && p[-1] == '\r')
                len--;
            s[len] = '\0';
            c->start = (size_t)(p - c->buf) + 1;
            *line = s;
            return len;
        }
        size_t off = c->end - c->start;
        long n = fill(c);
        if (n < 0)
            return -1;
        if (n == 0)
            return fail(c, "connection closed by", 0);
        scanned = c->start + off;
    }
}

int conn_block(struct conn *c, size_t n, char **data)
{
    if (n + 2 > CONN_BUF)
        return fail(c, "block too large from", EMSGSIZE);
    while (c->end - c->start < n + 2) {
        long r = fill(c);
        if (r < 0)
            return -1;
        if (r == 0)
            return fail(c, "connection closed by", 0);
    }
    *data = c->buf + c->start;
    (*data)[n] = '\0';
    c->start += n + 2;
    return 0;
}

/* Read one response. *closing is set when the server said Connection: close. Returns 0, or -1
 * with *got_bytes telling whether any byte of it arrived. */
static int read_response(struct conn *c, struct http_resp *r, int *closing, int *got_bytes)
{
    char *line;
    *got_bytes = 0;
    long n = conn_line(c, &line);
    if (n < 0)
        return -1;
    *got_bytes = 1;
    if (n < 12 || strncmp(line, "HTTP/1.", 7) != 0)
        return fail(c, "bad status line from", 0);
    r->status = atoi(line + 9);
    long clen = -1;
    *closing = 0;
    for (;;) {
        n = conn_line(c, &line);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            clen = strtol(line + 15, NULL, 10);
        else if (strncasecmp(line, "Connection:", 11) == 0 && strcasestr(line + 11, "close"))
            *closing = 1;
        else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0)
            return fail(c, "chunked answers are not supported from", 0);
    }
    if (clen < 0 || clen >= CONN_BUF)
        return fail(c, "no usable Content-Length from", 0);
    while (c->end - c->start < (size_t)clen) {
        long got = fill(c);
        if (got < 0)
            return -1;
        if (got == 0)
            return fail(c, "connection closed by", 0);
    }
    char *body = c->buf + c->start;
    c->start += (size_t)clen;
    r->body = body;
    r->len = (size_t)clen;
    return 0;
}

int http_call(struct conn *c, const char *method, const char *path, const char *body, size_t blen,
              struct http_resp *r)
{
    return http_call_as(c, method, path, "application/json", NULL, body, blen, r);
}

int http_call_as(struct conn *c, const char *method, const char *path, const char *ctype,
                 const char *headers, const char *body, size_t blen, struct http_resp *r)
{
    char auth[300] = "";
    if (c->token)
        snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", c->token);
    int hl;
    if (body)
        hl = snprintf(c->out, HEAD_MAX,
                      "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%s%sContent-Type: %s\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      method, path, c->host, c->port, auth, headers ? headers : "", ctype, blen);
    else
        hl = snprintf(c->out, HEAD_MAX, "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n", method, path,
                      c->host, c->port, auth);
    if (hl < 0 || hl >= HEAD_MAX || (size_t)hl + blen > CONN_BUF) {
        snprintf(c->err, sizeof c->err, "request too long");
        return -1;
    }
    if (body)
        memcpy(c->out + hl, body, blen);
    size_t total = (size_t)hl + (body ? blen : 0);
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = c->fd >= 0;
        int closing = 0, got = 0;
        if (conn_send(c, c->out, total) == 0 && read_response(c, r, &closing, &got) == 0) {
            if (closing)
                conn_close(c); /* the body stays readable: the buffer is kept */
            return 0;
        }
        if (!reused || got)
            return -1;
    }
    return -1;
}
