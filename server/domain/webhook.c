/* Webhook delivery rules (webhook.h). */
#include "webhook.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "job.h"
#include "lease.h"

static int fail(char *why, size_t n, const char *msg)
{
    snprintf(why, n, "%s", msg);
    return -1;
}

int webhook_url_parse(const char *url, struct webhook_url *out, char *why, size_t n)
{
    memset(out, 0, sizeof *out);
    size_t len = strlen(url);
    if (len > WEBHOOK_URL_MAX)
        return fail(why, n, "longer than 2048 bytes");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f)
            return fail(why, n, "a space or control character");
    const char *p;
    if (strncasecmp(url, "http://", 7) == 0) {
        p = url + 7;
        out->port = 80;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        p = url + 8;
        out->https = 1;
        out->port = 443;
    } else {
        return fail(why, n, "not an http:// or https:// URL");
    }
    if (strchr(url, '#'))
        return fail(why, n, "a fragment (#) is not sent");
    size_t auth = strcspn(p, "/?");
    if (memchr(p, '@', auth))
        return fail(why, n, "user info (user@host) is not allowed");
    const char *host = p, *end = p + auth, *colon;
    if (*host == '[') {
        const char *close = memchr(host, ']', auth);
        size_t hl = close ? (size_t)(close - host) - 1 : 0;
        if (hl == 0 || hl > WEBHOOK_HOST_MAX || strspn(host + 1, "0123456789abcdefABCDEF:.") != hl)
            return fail(why, n, "a bad IPv6 address");
        memcpy(out->host, host + 1, hl);
        colon = close + 1 < end ? close + 1 : NULL;
        if (colon && *colon != ':')
            return fail(why, n, "a bad IPv6 address");
    } else {
        colon = memchr(host, ':', auth);
        size_t hl = (size_t)((colon ? colon : end) - host);
        if (hl == 0)
            return fail(why, n, "no host");
        if (hl > WEBHOOK_HOST_MAX)
            return fail(why, n, "a host longer than 253 bytes");
        for (size_t i = 0; i < hl; i++) {
            char c = host[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_'))
                return fail(why, n, "a host of other characters than A-Z a-z 0-9 . - _");
        }
        memcpy(out->host, host, hl);
    }
    if (colon) {
        long port = 0;
        const char *d = colon + 1;
        if (d == end)
            return fail(why, n, "an empty port");
        for (; d < end; d++) {
            if (*d < '0' || *d > '9' || (port = port * 10 + (*d - '0')) > 65535)
                return fail(why, n, "a port that is not 1-65535");
        }
        if (port < 1)
            return fail(why, n, "a port that is not 1-65535");
        out->port = (int)port;
    }
    snprintf(out->target, sizeof out->target, "%s%s", *end == '/' ? "" : "/", end);
    return 0;
}

static enum webhook_addr class4(const unsigned char *a)
{
    if (a[0] == 127)
        return WEBHOOK_ADDR_LOOPBACK;
    if (a[0] == 0)
        return WEBHOOK_ADDR_UNSPECIFIED;
    if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) ||
        (a[0] == 100 && (a[1] & 0xc0) == 64))
        return WEBHOOK_ADDR_PRIVATE;
    if (a[0] == 169 && a[1] == 254)
        return WEBHOOK_ADDR_LINK_LOCAL;
    return WEBHOOK_ADDR_PUBLIC;
}

enum webhook_addr webhook_addr_class(const unsigned char *ip4, const unsigned char *ip6)
{
    if (ip4)
        return class4(ip4);
    static const unsigned char zero[12] = {0};
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(ip6, mapped, 12) == 0)
        return class4(ip6 + 12);
    if (memcmp(ip6, zero, 12) == 0) {
        if (ip6[12] == 0 && ip6[13] == 0 && ip6[14] == 0 && ip6[15] <= 1)
            return ip6[15] == 1 ? WEBHOOK_ADDR_LOOPBACK : WEBHOOK_ADDR_UNSPECIFIED;
        return class4(ip6 + 12); /* IPv4-compatible */
    }
    if ((ip6[0] & 0xfe) == 0xfc)
        return WEBHOOK_ADDR_PRIVATE;
    if (ip6[0] == 0xfe && (ip6[1] & 0xc0) == 0x80)
        return WEBHOOK_ADDR_LINK_LOCAL;
    return WEBHOOK_ADDR_PUBLIC;
}

const char *webhook_addr_name(enum webhook_addr c)
{
    switch (c) {
    case WEBHOOK_ADDR_LOOPBACK:
        return "loopback";
    case WEBHOOK_ADDR_PRIVATE:
        return "private";
    case WEBHOOK_ADDR_LINK_LOCAL:
        return "link-local";
    case WEBHOOK_ADDR_UNSPECIFIED:
        return "unspecified";
    default:
        return "public";
    }
}

struct webhook_state webhook_after(const struct webhook_state *before, int status,
                                   int64_t retry_after, int64_t now, int64_t base, double jitter)
{
    struct webhook_state s = {.failing_since = before->failing_since,
                              .attempts = before->attempts + 1,
                              .next_attempt_at = JOB_NONE};
    if (status >= 200 && status <= 299) {
        s = (struct webhook_state){
            .failing_since = JOB_NONE, .next_attempt_at = JOB_NONE, .advance = 1, .delivered = 1};
        return s;
    }
    if (s.failing_since == JOB_NONE)
        s.failing_since = now;
    if (status == 410) {
        s.disable = 1;
        return s;
    }
    if (now - s.failing_since >= WEBHOOK_GIVE_UP) {
        s = (struct webhook_state){
            .failing_since = JOB_NONE, .next_attempt_at = JOB_NONE, .advance = 1, .given_up = 1};
        return s;
    }
    int64_t wait = backoff_delay(base, WEBHOOK_WAIT_MAX, s.attempts, jitter);
    if (retry_after > WEBHOOK_RETRY_AFTER_MAX)
        retry_after = WEBHOOK_RETRY_AFTER_MAX;
    if (retry_after > wait)
        wait = retry_after;
    s.next_attempt_at = now + wait;
    return s;
}
