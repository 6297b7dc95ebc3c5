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

/* A cursor over a header's value, for webhook_retry_after. */
struct hcur {
    const char *p, *end;
};

/* Take the n bytes of s at c. */
static int take_n(struct hcur *c, const char *s, size_t n)
{
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
        return 0;
    c->p += n;
    return 1;
}

static int take(struct hcur *c, const char *s)
{
    return take_n(c, s, strlen(s));
}

/* Take exactly `digits` digits at c into *out. */
static int take_num(struct hcur *c, int digits, int *out)
{
    if (c->end - c->p < digits)
        return 0;
    int v = 0;
    for (int i = 0; i < digits; i++) {
        if (c->p[i] < '0' || c->p[i] > '9')
            return 0;
        v = v * 10 + (c->p[i] - '0');
    }
    c->p += digits;
    *out = v;
    return 1;
}

static const char *const wday_names[7] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                          "Friday", "Saturday", "Sunday"};
static const char *const month_names[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Take a day's name at c: its three letters, or (full) its whole name. */
static int take_wday(struct hcur *c, int full)
{
    for (int i = 0; i < 7; i++)
        if (take_n(c, wday_names[i], full ? strlen(wday_names[i]) : 3))
            return 1;
    return 0;
}

/* Take a month's name at c into *m (1-12). */
static int take_month(struct hcur *c, int *m)
{
    for (int i = 0; i < 12; i++)
        if (take(c, month_names[i])) {
            *m = i + 1;
            return 1;
        }
    return 0;
}

/* Take "hh:mm:ss" at c into the seconds of the day. */
static int take_time(struct hcur *c, int64_t *secs)
{
    int h, m, s;
    if (!take_num(c, 2, &h) || !take(c, ":") || !take_num(c, 2, &m) || !take(c, ":") ||
        !take_num(c, 2, &s) || h > 23 || m > 59 || s > 60)
        return 0;
    *secs = h * 3600 + m * 60 + s;
    return 1;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The year of epoch second t. */
static int64_t year_of(int64_t t)
{
    int64_t y = 1970 + t / 31556952; /* close; then set right */
    while (days_from_civil(y, 1, 1) * 86400 > t)
        y--;
    while (days_from_civil(y + 1, 1, 1) * 86400 <= t)
        y++;
    return y;
}

/* The epoch second of the HTTP-date at c (the whole of it), or -1. */
static int64_t http_date(struct hcur c, int64_t now)
{
    int d = 0, m = 0, y = 0;
    int64_t secs;
    struct hcur a = c;
    if (take_wday(&a, 0) && take(&a, ", ")) { /* IMF-fixdate */
        if (!take_num(&a, 2, &d) || !take(&a, " ") || !take_month(&a, &m) || !take(&a, " ") ||
            !take_num(&a, 4, &y) || !take(&a, " ") || !take_time(&a, &secs) || !take(&a, " GMT"))
            return -1;
    } else if ((a = c, take_wday(&a, 1)) && take(&a, ", ")) { /* RFC 850 */
        if (!take_num(&a, 2, &d) || !take(&a, "-") || !take_month(&a, &m) || !take(&a, "-") ||
            !take_num(&a, 2, &y) || !take(&a, " ") || !take_time(&a, &secs) || !take(&a, " GMT"))
            return -1;
        int64_t cur = year_of(now);
        y += (int)(cur - cur % 100);
        if (y > cur + 50)
            y -= 100;
    } else if ((a = c, take_wday(&a, 0)) && take(&a, " ")) { /* asctime */
        if (!take_month(&a, &m) || !take(&a, " ") ||
            !(take_num(&a, 2, &d) || (take(&a, " ") && take_num(&a, 1, &d))) || !take(&a, " ") ||
            !take_time(&a, &secs) || !take(&a, " ") || !take_num(&a, 4, &y))
            return -1;
    } else {
        return -1;
    }
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (a.p != a.end || d < 1 || d > mdays[m - 1] || (m == 2 && d == 29 && !leap))
        return -1;
    return days_from_civil(y, m, d) * 86400 + secs;
}

int64_t webhook_retry_after(const char *v, size_t len, int64_t now)
{
    struct hcur c = {v, v + len};
    while (c.p < c.end && (*c.p == ' ' || *c.p == '\t'))
        c.p++;
    while (c.end > c.p && (c.end[-1] == ' ' || c.end[-1] == '\t'))
        c.end--;
    if (c.p == c.end)
        return -1;
    if (*c.p >= '0' && *c.p <= '9') { /* delay-seconds */
        int64_t s = 0;
        for (const char *p = c.p; p < c.end; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            if (s <= WEBHOOK_RETRY_AFTER_MAX)
                s = s * 10 + (*p - '0');
        }
        return s > WEBHOOK_RETRY_AFTER_MAX ? WEBHOOK_RETRY_AFTER_MAX : s;
    }
    int64_t at = http_date(c, now);
    if (at < 0)
        return -1;
    if (at <= now)
        return 0;
    return at - now > WEBHOOK_RETRY_AFTER_MAX ? WEBHOOK_RETRY_AFTER_MAX : at - now;
}
