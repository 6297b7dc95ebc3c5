/* W3C Trace Context checks (server/domain/trace.h): traceparent of version 00 and tracestate
 * with its bounds. */
#include <stdio.h>
#include <string.h>

#include "testlib.h"
#include "trace.h"

#define TP_OK "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int tp(const char *s)
{
    return trace_parent_ok(s, strlen(s));
}

static int ts(const char *s)
{
    return trace_state_ok(s, strlen(s));
}

TEST(traceparent_version_00)
{
    CHECK_INT(tp(TP_OK), 1);
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"), 1); /* not sampled */
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff"), 1); /* any flags */
    CHECK_INT(trace_parent_ok(TP_OK "-x", TRACE_PARENT_LEN), 1); /* n bounds the read */
    CHECK_INT(trace_parent_ok(NULL, 0), 0);
}

TEST(traceparent_refused)
{
    CHECK_INT(tp(""), 0);
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"), 0);    /* no flags */
    CHECK_INT(tp(TP_OK "0"), 0);                                                 /* too long */
    CHECK_INT(tp(TP_OK "-extra"), 0);                                            /* v00: exact */
    CHECK_INT(tp("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), 0); /* version */
    CHECK_INT(tp("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), 0);
    CHECK_INT(tp("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"), 0); /* uppercase */
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01"), 0);
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A"), 0);
    CHECK_INT(tp("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), 0); /* zero ids */
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"), 0);
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"), 0); /* not hex */
    CHECK_INT(tp("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), 0); /* dashes */
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01"), 0);
    CHECK_INT(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01"), 0);
}

TEST(tracestate_members)
{
    CHECK_INT(ts(""), 1);
    CHECK_INT(ts(" \t "), 1);
    CHECK_INT(ts("congo=t61rcWkgMzE"), 1);
    CHECK_INT(ts("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"), 1);
    CHECK_INT(ts("rojo=00f067aa0ba902b7 ,\tcongo=t61rcWkgMzE , "), 1); /* blanks, empty */
    CHECK_INT(ts("a_b-c*d/e=v"), 1);
    CHECK_INT(ts("tenant1@vendor=x"), 1);
    CHECK_INT(ts("1tenant@vendor=x"), 1);
    CHECK_INT(ts("k=a b"), 1);                  /* an inner space is part of the value */
    CHECK_INT(ts("Congo=x"), 0);                /* uppercase key */
    CHECK_INT(ts("1abc=x"), 0);                 /* a simple key starts with a letter */
    CHECK_INT(ts("congo"), 0);                  /* no value */
    CHECK_INT(ts("congo="), 0);                 /* empty value */
    CHECK_INT(ts("congo=a=b"), 0);              /* '=' in the value */
    CHECK_INT(ts("congo=\x7f"), 0);             /* not printable */
    CHECK_INT(ts("a=1,b=2,a=3"), 0);            /* a key twice */
    CHECK_INT(ts("t@1vendor=x"), 0);            /* a system id starts with a letter */
    CHECK_INT(ts("t@vendorvendorvendor=x"), 0); /* system id over 14 */
    CHECK_INT(ts("@vendor=x"), 0);
    CHECK_INT(ts("t@=x"), 0);
    CHECK_INT(ts("t@v@w=x"), 0);
}

TEST(tracestate_bounds)
{
    char s[TRACE_STATE_MAX + 64];
    size_t n = 0;
    for (int i = 0; i < TRACE_STATE_MEMBERS; i++)
        n += (size_t)snprintf(s + n, sizeof s - n, "%sk%d=v", i ? "," : "", i);
    CHECK_INT(trace_state_ok(s, n), 1); /* 32 members */
    n += (size_t)snprintf(s + n, sizeof s - n, ",k99=v");
    CHECK_INT(trace_state_ok(s, n), 0); /* 33 */

    memset(s, 0, sizeof s);
    memcpy(s, "k=", 2);
    memset(s + 2, 'v', 256);
    CHECK_INT(trace_state_ok(s, 258), 1);
    s[258] = 'v';
    CHECK_INT(trace_state_ok(s, 259), 0); /* a value over 256 */

    /* 512 bytes exactly is valid, 513 is not: members of 63 bytes plus commas. */
    n = 0;
    for (int i = 0; n + 64 <= TRACE_STATE_MAX; i++)
        n += (size_t)snprintf(s + n, sizeof s - n, "%sk%02d=%0*d", i ? "," : "", i, i ? 59 : 60, 0);
    memset(s + n, ' ', TRACE_STATE_MAX - n); /* trailing blanks up to the bound */
    CHECK_INT(trace_state_ok(s, TRACE_STATE_MAX), 1);
    s[TRACE_STATE_MAX] = ' ';
    CHECK_INT(trace_state_ok(s, TRACE_STATE_MAX + 1), 0);
    CHECK_INT(trace_state_ok(NULL, 0), 0);
}

TEST_MAIN(TEST_ENTRY(traceparent_version_00), TEST_ENTRY(traceparent_refused),
          TEST_ENTRY(tracestate_members), TEST_ENTRY(tracestate_bounds))
