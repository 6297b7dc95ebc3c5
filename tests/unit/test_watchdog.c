#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "testlib.h"
#include "watchdog.h"

#define TIMEOUT 2000 /* ms */

/* A fake connection: the bytes it has received, and how often watchdog_step asked. */
struct fake {
    uint64_t rx;
    int known; /* 0: the kernel does not say */
    int asked;
};

static int fake_rx(void *arg, uint64_t *n)
{
    struct fake *f = arg;
    f->asked++;
    if (!f->known)
        return -1;
    *n = f->rx;
    return 0;
}

/* One look at the fake connection. */
static int look(struct watchdog_clock *c, struct fake *f, uint32_t seq, int64_t now)
{
    return watchdog_step(c, seq, fake_rx, f, now, TIMEOUT);
}

TEST(silent_new_connection_is_left_to_the_idle_timeout)
{
    struct watchdog_clock c = {0};
    struct fake f = {.known = 1};
    for (int64_t t = 1000; t < 1000 + 100 * TIMEOUT; t += 250)
        CHECK_INT(look(&c, &f, 0, t), 0);
}

TEST(head_is_closed_after_the_timeout_from_its_first_byte)
{
    struct watchdog_clock c = {0};
    struct fake f = {.known = 1};
    CHECK_INT(look(&c, &f, 0, 1000), 0);
    f.rx = 1; /* "G" */
    CHECK_INT(look(&c, &f, 0, 1250), 0);
    /* One byte more at every look does not push the deadline back. */
    int64_t t = 1500;
    for (; t <= 1250 + TIMEOUT; t += 250) {
        f.rx++;
        CHECK_INT(look(&c, &f, 0, t), 0);
    }
    f.rx++;
    CHECK_INT(look(&c, &f, 0, 1250 + TIMEOUT + 1), 1);
    /* Nor does silence after the first bytes. */
    struct watchdog_clock c2 = {0};
    struct fake f2 = {.known = 1, .rx = 20};
    CHECK_INT(look(&c2, &f2, 0, 5000), 0);
    CHECK_INT(look(&c2, &f2, 0, 5000 + TIMEOUT), 0);
    CHECK_INT(look(&c2, &f2, 0, 5001 + TIMEOUT), 1);
}

TEST(complete_headers_stop_the_clock)
{
    struct watchdog_clock c = {0};
    struct fake f = {.known = 1, .rx = 10};
    CHECK_INT(look(&c, &f, 0, 1000), 0); /* the head started */
    f.rx = 300;
    /* The access handler ran (seq odd): a slow body or a parked long poll is not timed. */
    for (int64_t t = 1250; t < 1000 + 10 * TIMEOUT; t += 250) {
        f.rx += 1000;
        CHECK_INT(look(&c, &f, 1, t), 0);
    }
    /* Answered (seq even again): idle from the bytes received by then. */
    CHECK_INT(look(&c, &f, 2, 30000), 0);
    for (int64_t t = 30250; t < 30000 + 10 * TIMEOUT; t += 250)
        CHECK_INT(look(&c, &f, 2, t), 0);
    /* The next request's first byte starts a new clock. */
    f.rx++;
    CHECK_INT(look(&c, &f, 2, 60000), 0);
    CHECK_INT(look(&c, &f, 2, 60000 + TIMEOUT), 0);
    CHECK_INT(look(&c, &f, 2, 60001 + TIMEOUT), 1);
}

TEST(requests_between_two_looks_restart_the_clock)
{
    struct watchdog_clock c = {0};
    struct fake f = {.known = 1, .rx = 10};
    CHECK_INT(look(&c, &f, 0, 1000), 0);
    /* Two whole requests came and went between looks; the clock of the first is gone. */
    f.rx = 500;
    CHECK_INT(look(&c, &f, 4, 1000 + 2 * TIMEOUT), 0);
    CHECK_INT(look(&c, &f, 4, 1000 + 3 * TIMEOUT), 0);
    /* A request running at the look also resets it. */
    struct watchdog_clock c2 = {0};
    struct fake f2 = {.known = 1, .rx = 10};
    CHECK_INT(look(&c2, &f2, 0, 1000), 0);
    CHECK_INT(look(&c2, &f2, 3, 1000 + 2 * TIMEOUT), 0);
    CHECK_INT(look(&c2, &f2, 4, 1000 + 3 * TIMEOUT), 0);
    CHECK_INT(look(&c2, &f2, 4, 1000 + 4 * TIMEOUT), 0);
}

TEST(unknown_byte_counts_time_nothing)
{
    struct watchdog_clock c = {0};
    struct fake f = {.known = 0, .rx = 99};
    for (int64_t t = 1000; t < 1000 + 10 * TIMEOUT; t += 250)
        CHECK_INT(look(&c, &f, 0, t), 0);
    CHECK_INT(look(&c, &f, 2, 1000 + 11 * TIMEOUT), 0);
    CHECK_INT(look(&c, &f, 2, 1000 + 20 * TIMEOUT), 0);
}

TEST(byte_count_is_read_only_when_needed)
{
    struct watchdog_clock c = {0};
    struct fake f = {.known = 1};
    CHECK_INT(look(&c, &f, 1, 1000), 0); /* headers in: no need */
    CHECK_INT(f.asked, 0);
    CHECK_INT(look(&c, &f, 2, 1250), 0); /* finished: the mark */
    CHECK_INT(f.asked, 1);
    f.rx = 5;
    CHECK_INT(look(&c, &f, 2, 1500), 0); /* idle: has a head started? */
    CHECK_INT(f.asked, 2);
    CHECK_INT(look(&c, &f, 2, 1750), 0); /* started: only the time counts */
    CHECK_INT(look(&c, &f, 2, 1501 + TIMEOUT), 1);
    CHECK_INT(f.asked, 2);
}

/* A connected loopback TCP pair: *client and *server. Returns 0, or -1. */
static int tcp_pair(int *client, int *server)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        return -1;
    *client = socket(AF_INET, SOCK_STREAM, 0);
    if (*client < 0 || connect(*client, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    *server = accept(l, NULL, NULL);
    close(l);
    return *server >= 0 ? 0 : -1;
}

TEST(rx_bytes_counts_what_a_tcp_socket_received)
{
    int cl = -1, sv = -1;
    CHECK_INT(tcp_pair(&cl, &sv), 0);
    uint64_t n = 99;
    CHECK_INT(watchdog_rx_bytes(sv, &n), 0);
    CHECK_INT(n, 0);
    CHECK_INT(write(cl, "GET / HT", 8), 8);
    /* Counted once the kernel has taken the bytes in, unread. */
    int64_t deadline = clock_mono_ms() + 5000;
    while (watchdog_rx_bytes(sv, &n) == 0 && n < 8 && clock_mono_ms() < deadline)
        poll(NULL, 0, 10);
    CHECK_INT(n, 8);
    char buf[8];
    CHECK_INT(read(sv, buf, sizeof buf), 8);
    CHECK_INT(watchdog_rx_bytes(sv, &n), 0);
    CHECK_INT(n, 8);
    /* Not a TCP socket: unknown. */
    int p[2];
    CHECK_INT(pipe(p), 0);
    CHECK_INT(watchdog_rx_bytes(p[0], &n), -1);
    int u[2];
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
    CHECK_INT(watchdog_rx_bytes(u[0], &n), -1);
    close(p[0]);
    close(p[1]);
    close(u[0]);
    close(u[1]);
    close(cl);
    close(sv);
}

TEST(start_and_stop)
{
    struct watchdog *w = watchdog_start(TIMEOUT);
    CHECK(w != NULL);
    int64_t t0 = clock_mono_ms();
    watchdog_stop(w);
    watchdog_stop(w);
    CHECK(clock_mono_ms() - t0 < 5000);
    watchdog_free(w);
    watchdog_free(watchdog_start(TIMEOUT));
    watchdog_free(NULL);
    watchdog_stop(NULL);
}

TEST_MAIN(TEST_ENTRY(silent_new_connection_is_left_to_the_idle_timeout),
          TEST_ENTRY(head_is_closed_after_the_timeout_from_its_first_byte),
          TEST_ENTRY(complete_headers_stop_the_clock),
          TEST_ENTRY(requests_between_two_looks_restart_the_clock),
          TEST_ENTRY(unknown_byte_counts_time_nothing),
          TEST_ENTRY(byte_count_is_read_only_when_needed),
          TEST_ENTRY(rx_bytes_counts_what_a_tcp_socket_received), TEST_ENTRY(start_and_stop))
