/* Webhook delivery rules (server/domain/webhook.h): what an attempt's answer does to the
 * delivery state (2xx advances, 410 disables, otherwise backoff from the base with jitter or
 * a longer Retry-After, given up after three days), which addresses are refused, and how a
 * URL is read. */
#include <arpa/inet.h>
#include <string.h>

#include "job.h"
#include "testlib.h"
#include "webhook.h"

#define NOW 1700000000

static struct webhook_state fresh(void)
{
    return (struct webhook_state){.failing_since = JOB_NONE, .next_attempt_at = JOB_NONE};
}

TEST(success_advances_and_clears_failing)
{
    struct webhook_state b = {.failing_since = NOW - 50, .attempts = 3};
    struct webhook_state s = webhook_after(&b, 204, -1, NOW, 5, 0.5);
    CHECK(s.advance && s.delivered && !s.given_up && !s.disable);
    CHECK_INT(s.failing_since, JOB_NONE);
    CHECK_INT(s.next_attempt_at, JOB_NONE);
    CHECK_INT(s.attempts, 0);
}

TEST(failures_back_off_doubling_from_base)
{
    struct webhook_state b = fresh();
    int64_t waits[4];
    for (int i = 0; i < 4; i++) {
        struct webhook_state s = webhook_after(&b, 500, -1, NOW, 5, 0.0);
        CHECK(!s.advance && !s.delivered && !s.disable);
        CHECK_INT(s.failing_since, NOW);
        CHECK_INT(s.attempts, i + 1);
        waits[i] = s.next_attempt_at - NOW;
        b = s;
    }
    CHECK_INT(waits[0], 5);
    CHECK_INT(waits[1], 10);
    CHECK_INT(waits[2], 20);
    CHECK_INT(waits[3], 40);
    /* No answer at all (status 0) is a failure like any other. */
    struct webhook_state s = webhook_after(&b, 0, -1, NOW, 5, 0.0);
    CHECK_INT(s.attempts, 5);
    CHECK_INT(s.next_attempt_at - NOW, 80);
}

TEST(jitter_adds_up_to_ten_percent_and_waits_are_capped)
{
    struct webhook_state b = fresh();
    b.attempts = 2;
    struct webhook_state s = webhook_after(&b, 503, -1, NOW, 100, 0.999);
    CHECK(s.next_attempt_at - NOW >= 400 && s.next_attempt_at - NOW < 440);
    b.attempts = 40;
    s = webhook_after(&b, 503, -1, NOW, 100, 0.0);
    CHECK_INT(s.next_attempt_at - NOW, WEBHOOK_WAIT_MAX);
}

TEST(retry_after_is_honoured_when_longer)
{
    struct webhook_state b = fresh();
    struct webhook_state s = webhook_after(&b, 429, 30, NOW, 1, 0.0);
    CHECK_INT(s.next_attempt_at - NOW, 30);
    s = webhook_after(&b, 503, 0, NOW, 7, 0.0); /* shorter than the backoff: the backoff */
    CHECK_INT(s.next_attempt_at - NOW, 7);
    s = webhook_after(&b, 503, 10 * 86400, NOW, 1, 0.0); /* bounded */
    CHECK_INT(s.next_attempt_at - NOW, WEBHOOK_RETRY_AFTER_MAX);
}

TEST(gone_disables_and_keeps_the_event)
{
    struct webhook_state b = fresh();
    struct webhook_state s = webhook_after(&b, 410, -1, NOW, 5, 0.0);
    CHECK(s.disable && !s.advance && !s.delivered);
    CHECK_INT(s.failing_since, NOW);
}

TEST(given_up_after_three_days)
{
    struct webhook_state b = {.failing_since = NOW - WEBHOOK_GIVE_UP + 1, .attempts = 70};
    struct webhook_state s = webhook_after(&b, 500, -1, NOW, 5, 0.0);
    CHECK(!s.advance && !s.given_up); /* a second before: retried */
    b.failing_since = NOW - WEBHOOK_GIVE_UP;
    s = webhook_after(&b, 500, -1, NOW, 5, 0.0);
    CHECK(s.advance && s.given_up && !s.delivered);
    CHECK_INT(s.failing_since, JOB_NONE);
    CHECK_INT(s.next_attempt_at, JOB_NONE);
    CHECK_INT(s.attempts, 0);
}

/* The class of an address in text (-1 when the text is no address). */
static int v4(const char *text)
{
    unsigned char a[4];
    return inet_pton(AF_INET, text, a) == 1 ? (int)webhook_addr_class(a, NULL) : -1;
}

static int v6(const char *text)
{
    unsigned char a[16];
    return inet_pton(AF_INET6, text, a) == 1 ? (int)webhook_addr_class(NULL, a) : -1;
}

TEST(addresses_are_classified)
{
    CHECK_INT(v4("127.0.0.1"), WEBHOOK_ADDR_LOOPBACK);
    CHECK_INT(v4("127.255.1.2"), WEBHOOK_ADDR_LOOPBACK);
    CHECK_INT(v4("10.1.2.3"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v4("172.16.0.1"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v4("172.31.255.255"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v4("172.32.0.1"), WEBHOOK_ADDR_PUBLIC);
    CHECK_INT(v4("192.168.1.1"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v4("169.254.169.254"), WEBHOOK_ADDR_LINK_LOCAL);
    CHECK_INT(v4("0.0.0.0"), WEBHOOK_ADDR_UNSPECIFIED);
    CHECK_INT(v4("8.8.8.8"), WEBHOOK_ADDR_PUBLIC);
    CHECK_INT(v4("93.184.216.34"), WEBHOOK_ADDR_PUBLIC);
    CHECK_INT(v6("::1"), WEBHOOK_ADDR_LOOPBACK);
    CHECK_INT(v6("::"), WEBHOOK_ADDR_UNSPECIFIED);
    CHECK_INT(v6("fc00::1"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v6("fd12:3456::1"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v6("fe80::1"), WEBHOOK_ADDR_LINK_LOCAL);
    CHECK_INT(v6("::ffff:127.0.0.1"), WEBHOOK_ADDR_LOOPBACK);
    CHECK_INT(v6("::ffff:10.0.0.1"), WEBHOOK_ADDR_PRIVATE);
    CHECK_INT(v6("2606:4700:4700::1111"), WEBHOOK_ADDR_PUBLIC);
}

TEST(urls_are_read)
{
    struct webhook_url u;
    char why[128];
    CHECK_INT(webhook_url_parse("https://hooks.example.com/in?x=1", &u, why, sizeof why), 0);
    CHECK(u.https);
    CHECK_STR(u.host, "hooks.example.com");
    CHECK_INT(u.port, 443);
    CHECK_STR(u.target, "/in?x=1");
    CHECK_INT(webhook_url_parse("HTTP://10.0.0.1:8080", &u, why, sizeof why), 0);
    CHECK(!u.https);
    CHECK_INT(u.port, 8080);
    CHECK_STR(u.target, "/");
    CHECK_INT(webhook_url_parse("http://[::1]:9/a", &u, why, sizeof why), 0);
    CHECK_STR(u.host, "::1");
    CHECK_INT(u.port, 9);
    CHECK_INT(webhook_url_parse("http://h?q", &u, why, sizeof why), 0);
    CHECK_STR(u.target, "/?q");
}

TEST(bad_urls_are_refused)
{
    struct webhook_url u;
    char why[128];
    const char *bad[] = {"ftp://x/",          "x",
                         "http://",           "http:///a",
                         "http://a b/",       "http://u:p@h/",
                         "http://h:0/",       "http://h:65536/",
                         "http://h:/",        "http://h:8x/",
                         "http://h/#frag",    "http://[::1/",
                         "http://[zz]/",      "http://h\n/",
                         "http://ex%61mple/", "javascript:alert(1)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(webhook_url_parse(bad[i], &u, why, sizeof why) == -1 && why[0]);
    char longer[WEBHOOK_URL_MAX + 2];
    memset(longer, 'a', sizeof longer - 1);
    memcpy(longer, "http://h/", 9);
    longer[sizeof longer - 1] = 0;
    CHECK_INT(webhook_url_parse(longer, &u, why, sizeof why), -1);
    longer[sizeof longer - 2] = 0; /* exactly the bound */
    CHECK_INT(webhook_url_parse(longer, &u, why, sizeof why), 0);
}

/* NOW is Tue, 14 Nov 2023 22:13:20 GMT. */
TEST(retry_after_reads_seconds_and_http_dates)
{
    struct {
        const char *v;
        int64_t want;
    } cases[] = {
        {"120", 120},
        {" \t7 ", 7},
        {"0", 0},
        {"99999999999999999999999", WEBHOOK_RETRY_AFTER_MAX},
        {"Tue, 14 Nov 2023 22:15:00 GMT", 100},   /* IMF-fixdate */
        {"Tuesday, 14-Nov-23 22:15:00 GMT", 100}, /* RFC 850 */
        {"Tue Nov 14 22:15:00 2023", 100},        /* asctime */
        {"Wed Nov  1 00:00:00 2023", 0},          /* asctime, one digit; past: 0 */
        {"Sun, 06 Nov 1994 08:49:37 GMT", 0},     /* in the past: at once */
        {"Tue, 14 Nov 2023 22:13:20 GMT", 0},     /* now */
        {"Fri, 01 Jan 2100 00:00:00 GMT", WEBHOOK_RETRY_AFTER_MAX},
        {"Friday, 01-Jan-99 00:00:00 GMT", 0}, /* 2099 is > 50 years ahead: 1999 */
        {"Thursday, 01-Jan-70 00:00:00 GMT", WEBHOOK_RETRY_AFTER_MAX}, /* 2070 */
        {"Thu, 29 Feb 2024 00:00:00 GMT", WEBHOOK_RETRY_AFTER_MAX},
        {"Wed, 15 Nov 2023 00:00:00 GMT", 6400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_INT(webhook_retry_after(cases[i].v, strlen(cases[i].v), NOW), cases[i].want);
    const char *bad[] = {"",
                         "  ",
                         "-3",
                         "1.5",
                         "12 s",
                         "Tue, 14 Nov 2023 22:15:00 UTC",
                         "Tue, 14 Nov 2023 22:15:00 GMTx",
                         "Tue, 14 Nov 23 22:15:00 GMT",
                         "Tue, 31 Feb 2023 00:00:00 GMT",
                         "Wed, 29 Feb 2023 00:00:00 GMT",
                         "Tue, 14 Nov 2023 24:00:00 GMT",
                         "Tue, 14 Nov 2023 22:60:00 GMT",
                         "Tue, 00 Nov 2023 22:15:00 GMT",
                         "Xyz, 14 Nov 2023 22:15:00 GMT",
                         "Tue, 14 Foo 2023 22:15:00 GMT",
                         "Tue,14 Nov 2023 22:15:00 GMT",
                         "Tues, 14-Nov-23 22:15:00 GMT",
                         "Tue Nov 14 22:15:00 23",
                         "tomorrow"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(webhook_retry_after(bad[i], strlen(bad[i]), NOW), -1);
    /* Only len bytes are read. */
    CHECK_INT(webhook_retry_after("120xyz", 3, NOW), 120);
}

TEST_MAIN(TEST_ENTRY(success_advances_and_clears_failing),
          TEST_ENTRY(failures_back_off_doubling_from_base),
          TEST_ENTRY(jitter_adds_up_to_ten_percent_and_waits_are_capped),
          TEST_ENTRY(retry_after_is_honoured_when_longer),
          TEST_ENTRY(gone_disables_and_keeps_the_event), TEST_ENTRY(given_up_after_three_days),
          TEST_ENTRY(addresses_are_classified), TEST_ENTRY(urls_are_read),
          TEST_ENTRY(bad_urls_are_refused), TEST_ENTRY(retry_after_reads_seconds_and_http_dates))
