/* The webhook client: a POST to a subscription's URL (http, or https with the system's CA
 * certificates), with the refusal of private addresses after resolving the host (so that a
 * name that resolves to another address at delivery than at PUT is refused too: DNS
 * rebinding). Blocking, with bounded waits; for the delivery thread (whdeliver.c) and the
 * PUT's check (h_webhooks.c). Thread-safe. */
#ifndef JOBQ_WHPOST_H
#define JOBQ_WHPOST_H

#include <stddef.h>
#include <stdint.h>

#include "webhook.h"

#define WHPOST_CONNECT_MS 5000    /* to connect (and finish TLS) to one address */
#define WHPOST_TOTAL_MS 15000     /* the whole attempt, from the first connect */
#define WHPOST_RESPONSE_MAX 65536 /* bytes of an answer read (then discarded) */
#define WHPOST_ADDRS_MAX 8        /* addresses of a host tried */
#define WHPOST_ERROR_MAX 160      /* bytes of an attempt's error text */
#define WHPOST_RETRY_AFTER_MAX 64 /* bytes of a Retry-After value kept (longer: ignored) */

/* Resolve u->host and check every address it resolves to: with allow_private 0, a loopback,
 * private, link-local or unspecified one refuses the whole host. Returns 1 when every address
 * may be used, 0 when one is refused (why says which: "resolves to 127.0.0.1 (loopback)"), -1
 * when the host does not resolve (why says so). why holds n bytes. May wait for DNS. */
int whpost_check(const struct webhook_url *u, int allow_private, char *why, size_t n);

/* One attempt. */
struct whpost_req {
    const struct webhook_url *url;
    const char *headers; /* extra header lines, each ending in \r\n */
    const char *body;
    size_t body_len;
    int allow_private;
    int cancel_fd; /* readable: give up at once (a stopping server); -1: none */
};

struct whpost_res {
    int status;                               /* the HTTP status, 0 when there was none */
    char retry_after[WHPOST_RETRY_AFTER_MAX]; /* the Retry-After header's value; "": none
                                               * (webhook_retry_after reads it) */
    char error[WHPOST_ERROR_MAX];             /* when status is 0 (or a line of the answer) */
};

/* POST rq->body to rq->url with rq->headers, content-type application/json and a
 * connection: close, to the first address of the host that connects (each checked as
 * whpost_check does, after resolving), within WHPOST_CONNECT_MS per connect and
 * WHPOST_TOTAL_MS in all (or until rq->cancel_fd is readable); read the status line and headers and at most
 * WHPOST_RESPONSE_MAX bytes of the answer, which are discarded. Fills *res (status 0 with
 * error set when no answer came). This function can't fail otherwise. */
void whpost(const struct whpost_req *rq, struct whpost_res *res);

#endif
