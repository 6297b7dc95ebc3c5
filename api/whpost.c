/* The webhook client (whpost.h): plain sockets, and OpenSSL for https. */
#include "whpost.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "clock.h"

/* The class of the address of ai, and its text into text (INET6_ADDRSTRLEN bytes). */
static enum webhook_addr addr_of(const struct addrinfo *ai, char *text)
{
    if (ai->ai_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ai->ai_addr;
        inet_ntop(AF_INET, &a->sin_addr, text, INET6_ADDRSTRLEN);
        return webhook_addr_class((const unsigned char *)&a->sin_addr, NULL);
    }
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ai->ai_addr;
    inet_ntop(AF_INET6, &a->sin6_addr, text, INET6_ADDRSTRLEN);
    return webhook_addr_class(NULL, (const unsigned char *)&a->sin6_addr);
}

/* Resolve u into *list (freeaddrinfo), each address checked: as whpost_check. */
static int resolve(const struct webhook_url *u, int allow_private, struct addrinfo **list,
                   char *why, size_t n)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    char port[8];
    snprintf(port, sizeof port, "%d", u->port);
    *list = NULL;
    int rc = getaddrinfo(u->host, port, &hints, list);
    if (rc != 0) {
        snprintf(why, n, "%s does not resolve: %s", u->host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *ai = *list; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        char text[INET6_ADDRSTRLEN] = "";
        enum webhook_addr c = addr_of(ai, text);
        if (c != WEBHOOK_ADDR_PUBLIC && !allow_private) {
            snprintf(why, n, "%s resolves to %s (%s): refused without --webhook-allow-private",
                     u->host, text, webhook_addr_name(c));
            freeaddrinfo(*list);
            *list = NULL;
            return 0;
        }
    }
    return 1;
}

int whpost_check(const struct webhook_url *u, int allow_private, char *why, size_t n)
{
    struct addrinfo *list;
    int rc = resolve(u, allow_private, &list, why, n);
    if (list)
        freeaddrinfo(list);
    return rc;
}

/* Milliseconds left until deadline (a clock_mono_ms() value), at least 0. */
static int left_ms(int64_t deadline)
{
    int64_t l = deadline - clock_mono_ms();
    return l > 0 ? (int)l : 0;
}

/* Wait until fd is ready for `events`, or deadline passes, or cancel_fd (-1: none) is
 * readable. Returns 1 when fd is ready, 0 when not. */
static int wait_fd(int fd, short events, int64_t deadline, int cancel_fd)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = cancel_fd, .events = POLLIN}};
        int rc = poll(p, cancel_fd >= 0 ? 2 : 1, left_ms(deadline));
        if (rc > 0)
            return cancel_fd < 0 || p[1].revents == 0;
        if (rc == 0 || errno != EINTR)
            return 0;
    }
}

/* A socket connected to one of list's addresses (non-blocking), or -1 with why set. */
static int connect_any(struct addrinfo *list, int64_t deadline, int cancel_fd, char *why, size_t n)
{
    int tried = 0;
    snprintf(why, n, "no address to connect to");
    for (struct addrinfo *ai = list; ai && tried < WHPOST_ADDRS_MAX; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        tried++;
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            snprintf(why, n, "socket: %s", strerror(errno));
            continue;
        }
        int64_t until = clock_mono_ms() + WHPOST_CONNECT_MS;
        if (until > deadline)
            until = deadline;
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        int err = rc == 0 ? 0 : errno;
        if (err == EINPROGRESS) {
            socklen_t len = sizeof err;
            err = wait_fd(fd, POLLOUT, until, cancel_fd) ? 0 : ETIMEDOUT;
            if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
        }
        if (err == 0)
            return fd;
        snprintf(why, n, "connect: %s", strerror(err));
        close(fd);
    }
    return -1;
}

/* A connection: its socket and, for https, its TLS session. */
struct conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    int64_t deadline;
    int cancel_fd;
};

static void conn_close(struct conn *c)
{
    if (c->ssl)
        SSL_free(c->ssl);
    if (c->ctx)
        SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
}

/* Wait for what the TLS call that returned rc wants. Returns 1 to try again, 0 to give up. */
static int tls_wait(struct conn *c, int rc)
{
    int e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        return wait_fd(c->fd, POLLIN, c->deadline, c->cancel_fd);
    if (e == SSL_ERROR_WANT_WRITE)
        return wait_fd(c->fd, POLLOUT, c->deadline, c->cancel_fd);
    return 0;
}

/* Start TLS on c for host, verifying its certificate against the system's CAs. */
static int tls_start(struct conn *c, const char *host, char *why, size_t n)
{
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx || SSL_CTX_set_default_verify_paths(c->ctx) != 1 || !(c->ssl = SSL_new(c->ctx))) {
        snprintf(why, n, "tls: cannot set up a client");
        return -1;
    }
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
    unsigned char ip[16];
    int literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    /* An address is checked against the certificate's IP names, and sent no SNI; a name
     * against its DNS names. */
    if (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1
                : SSL_set_tlsext_host_name(c->ssl, host) != 1 || SSL_set1_host(c->ssl, host) != 1) {
        snprintf(why, n, "tls: cannot set the name to verify");
        return -1;
    }
    SSL_set_fd(c->ssl, c->fd);
    for (;;) {
        ERR_clear_error();
        int rc = SSL_connect(c->ssl);
        if (rc == 1)
            return 0;
        if (!tls_wait(c, rc)) {
            long v = SSL_get_verify_result(c->ssl);
            snprintf(why, n, "tls handshake failed%s%s", v != X509_V_OK ? ": " : "",
                     v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
            return -1;
        }
    }
}

/* Send all n bytes of p. Returns 0 or -1. */
static int send_all(struct conn *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k;
        if (c->ssl) {
            ERR_clear_error();
            int rc = SSL_write(c->ssl, p, n > 65536 ? 65536 : (int)n);
            if (rc <= 0) {
                if (!tls_wait(c, rc))
                    return -1;
                continue;
            }
            k = rc;
        } else {
            k = send(c->fd, p, n, MSG_NOSIGNAL);
            if (k < 0) {
                if ((errno != EAGAIN && errno != EINTR) ||
                    !wait_fd(c->fd, POLLOUT, c->deadline, c->cancel_fd))
                    return -1;
                continue;
            }
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Read at most n bytes into p. Returns the count, 0 at the end, -1 on failure or timeout. */
static ssize_t recv_some(struct conn *c, char *p, size_t n)
{
    for (;;) {
        if (c->ssl) {
            ERR_clear_error();
            int rc = SSL_read(c->ssl, p, (int)n);
            if (rc > 0)
                return rc;
            int e = SSL_get_error(c->ssl, rc);
            if (e == SSL_ERROR_ZERO_RETURN)
                return 0;
            if (!tls_wait(c, rc))
                return -1;
            continue;
        }
        ssize_t k = recv(c->fd, p, n, 0);
        if (k >= 0)
            return k;
        if ((errno != EAGAIN && errno != EINTR) ||
            !wait_fd(c->fd, POLLIN, c->deadline, c->cancel_fd))
            return -1;
    }
}

/* Read the status and Retry-After of the answer's head in buf (len bytes, NUL-terminated). */
static void parse_head(const char *buf, struct whpost_res *res)
{
    int status = 0;
    if (sscanf(buf, "HTTP/%*d.%*d %d", &status) == 1 && status >= 100 && status <= 599)
        res->status = status;
    else
        snprintf(res->error, sizeof res->error, "not an HTTP answer");
    for (const char *l = strstr(buf, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, "retry-after:", 12) != 0)
            continue;
        const char *v = l + 14;
        const char *end = strstr(v, "\r\n");
        size_t n = end ? (size_t)(end - v) : strlen(v);
        if (n < sizeof res->retry_after) {
            memcpy(res->retry_after, v, n);
            res->retry_after[n] = 0;
        }
        break;
    }
}

/* Send the request on c and read the answer into res. */
static void exchange(struct conn *c, const struct whpost_req *rq, struct whpost_res *res)
{
    const struct webhook_url *u = rq->url;
    int v6 = strchr(u->host, ':') != NULL;
    int dflt = u->port == (u->https ? 443 : 80);
    char port[8] = "";
    if (!dflt)
        snprintf(port, sizeof port, ":%d", u->port);
    char head[WEBHOOK_URL_MAX + WEBHOOK_HOST_MAX + 256];
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s%s%s%s\r\nUser-Agent: jobq-webhooks\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n",
                      u->target, v6 ? "[" : "", u->host, v6 ? "]" : "", port, rq->body_len);
    if (hn < 0 || (size_t)hn >= sizeof head || send_all(c, head, (size_t)hn) != 0 ||
        send_all(c, rq->headers, strlen(rq->headers)) != 0 || send_all(c, "\r\n", 2) != 0 ||
        send_all(c, rq->body, rq->body_len) != 0) {
        snprintf(res->error, sizeof res->error, "sending the request failed or timed out");
        return;
    }
    char buf[8192], sink[8192];
    size_t got = 0, total = 0;
    int parsed = 0;
    while (total < WHPOST_RESPONSE_MAX) {
        size_t room = parsed ? sizeof sink : sizeof buf - 1 - got;
        if (room == 0)
            break; /* a head longer than buf: what came is parsed */
        ssize_t k = recv_some(c, parsed ? sink : buf + got, room);
        if (k <= 0)
            break;
        total += (size_t)k;
        if (!parsed) {
            got += (size_t)k;
            buf[got] = 0;
            if (strstr(buf, "\r\n\r\n")) {
                parse_head(buf, res);
                parsed = 1;
            }
        }
    }
    if (got == 0) {
        snprintf(res->error, sizeof res->error, "no answer (closed or timed out)");
        return;
    }
    if (!parsed)
        parse_head(buf, res);
}

void whpost(const struct whpost_req *rq, struct whpost_res *res)
{
    *res = (struct whpost_res){0};
    struct addrinfo *list;
    if (resolve(rq->url, rq->allow_private, &list, res->error, sizeof res->error) != 1)
        return;
    struct conn c = {
        .fd = -1, .deadline = clock_mono_ms() + WHPOST_TOTAL_MS, .cancel_fd = rq->cancel_fd};
    c.fd = connect_any(list, c.deadline, c.cancel_fd, res->error, sizeof res->error);
    freeaddrinfo(list);
    if (c.fd >= 0 &&
        (!rq->url->https || tls_start(&c, rq->url->host, res->error, sizeof res->error) == 0))
        exchange(&c, rq, res);
    conn_close(&c);
}
