/* Webhooks (../shared/API.md "Events, webhooks and trace context"; docs/events.md
 * "Webhooks"): the rules a delivery follows, pure. What an attempt's answer does to a
 * subscription's delivery state (retry with backoff and jitter, Retry-After, give up after
 * three days, 410), which addresses are refused, and how a subscription's URL is read. No
 * I/O and no clock: now is given. */
#ifndef JOBQ_WEBHOOK_H
#define JOBQ_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#define WEBHOOK_URL_MAX 2048          /* bytes of a subscription's URL */
#define WEBHOOK_HOST_MAX 253          /* bytes of its host */
#define WEBHOOK_GIVE_UP (3 * 86400)   /* seconds an event is retried before it is given up */
#define WEBHOOK_WAIT_MAX 3600         /* the longest wait between two attempts (backoff) */
#define WEBHOOK_RETRY_AFTER_MAX 86400 /* a Retry-After beyond this counts as this */
#define WEBHOOK_ROTATE_SECONDS 86400  /* a replaced secret still signs this long */
#define WEBHOOK_RETRY_BASE_DEFAULT 5  /* --webhook-retry-base */

/* A subscription's URL, read by webhook_url_parse. */
struct webhook_url {
    int https;                        /* 1: https, 0: http */
    char host[WEBHOOK_HOST_MAX + 1];  /* a name or an address, without IPv6 brackets */
    int port;                         /* 80 or 443 when the URL gives none */
    char target[WEBHOOK_URL_MAX + 1]; /* the path and query, "/" when empty */
};

/* Read url (NUL-terminated) as http(s)://host[:port][/path][?query]: the scheme http or
 * https (any case), no user info, no fragment, no space or control byte, at most
 * WEBHOOK_URL_MAX bytes. Returns 0 with out filled, or -1 with why (a phrase, size n) set.
 * This function can't fail otherwise. */
int webhook_url_parse(const char *url, struct webhook_url *out, char *why, size_t n);

/* What an address is, for the refusal of private ones. */
enum webhook_addr {
    WEBHOOK_ADDR_PUBLIC = 0,
    WEBHOOK_ADDR_LOOPBACK,    /* 127.0.0.0/8, ::1 */
    WEBHOOK_ADDR_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 */
    WEBHOOK_ADDR_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
    WEBHOOK_ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
};

/* The class of an IPv4 address (ip4: 4 bytes, network order) or IPv6 address (ip6: 16
 * bytes; an IPv4-mapped or -compatible one is classified as its IPv4 address). Exactly one of
 * ip4 and ip6 is not NULL. This function can't fail. */
enum webhook_addr webhook_addr_class(const unsigned char *ip4, const unsigned char *ip6);

/* The phrase of a class ("loopback", ...; "public"). */
const char *webhook_addr_name(enum webhook_addr c);

/* The delivery state of a subscription that an attempt changes. */
struct webhook_state {
    int64_t failing_since;   /* the first failed attempt at the head event; JOB_NONE: none */
    int64_t attempts;        /* attempts made at the head event */
    int64_t next_attempt_at; /* JOB_NONE: at once */
    int advance;             /* 1: the head event is done (delivered or given up) */
    int delivered;           /* 1: it was delivered (2xx) */
    int given_up;            /* 1: it failed for WEBHOOK_GIVE_UP seconds and is dropped */
    int disable;             /* 1: the receiver answered 410: the subscription is disabled */
};

/* The state after an attempt at the head event, made at now, that answered `status` (the
 * HTTP status, 0 when there was no answer: refused address, no connection, a timeout) with
 * retry_after seconds (-1: no Retry-After header), from the state before it (`before`: its
 * failing_since and attempts). A 2xx advances. A 410 disables and keeps the event at the head
 * (a re-enabled subscription sends it again). Anything else is a failure: failing_since stays
 * or becomes now, attempts grows, and the next attempt waits backoff_delay(base,
 * WEBHOOK_WAIT_MAX, attempts, jitter) (lease.h: doubling from base, 10 % jitter) or the
 * Retry-After (at most WEBHOOK_RETRY_AFTER_MAX) when that is longer; when the event has
 * failed for WEBHOOK_GIVE_UP seconds it is given up instead: it advances, recorded as failed.
 * jitter in [0, 1) (rand_unit()). This function can't fail. */
struct webhook_state webhook_after(const struct webhook_state *before, int status,
                                   int64_t retry_after, int64_t now, int64_t base, double jitter);

/* The seconds a Retry-After header's value v (len bytes, spaces and tabs around it ignored)
 * asks to wait at now (the store's clock): delay-seconds (digits), or an HTTP-date (RFC 9110
 * 5.6.7) in any of its three forms, IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", the
 * obsolete RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" (a two-digit year more than 50 years
 * ahead of now's is taken in the century before) and asctime "Sun Nov  6 08:49:37 1994".
 * A date at or before now is 0; anything longer than WEBHOOK_RETRY_AFTER_MAX is that. Returns
 * -1 when v is neither form (the header is then ignored). This function can't fail. */
int64_t webhook_retry_after(const char *v, size_t len, int64_t now);

#endif
