/* The request-head deadline, --header-timeout (nginx's client_header_timeout), which
 * libmicrohttpd 0.9.75 lacks: its idle timer restarts on every byte received, so a client that
 * sends its request line and headers a byte at a time (slowloris) would hold its connection
 * for ever. One thread looks at every connection about every WATCHDOG_TICK_MS: a connection
 * on which bytes of a new request have arrived (its TCP count of received bytes, TCP_INFO, has
 * grown since it was last idle) but whose headers are still incomplete (the access handler
 * has not been called for it) more than the timeout later is shut down with shutdown(2),
 * never close(2): libmicrohttpd owns the descriptor, sees the end of the stream and cleans up
 * (the request was never started, so nothing is answered and nothing is logged but one debug
 * line). The clock starts with the first byte of a request, the TLS handshake included on a
 * new connection, so a connection that sends nothing (new, or idle between keep-alive
 * requests) is left to --idle-timeout; a request body is not timed here.
 *
 * A connection is known to the watchdog from libmicrohttpd's STARTED notification to its
 * CLOSED one (watchdog_on_connection), which comes before libmicrohttpd closes the socket:
 * the descriptor is only touched under the watchdog's mutex while the connection is known,
 * so it cannot have been reused by another connection. */
#ifndef JOBQ_WATCHDOG_H
#define JOBQ_WATCHDOG_H

#include <microhttpd.h>
#include <stdint.h>

/* How often the thread looks at the connections. A request head is closed between
 * timeout and timeout + 2 ticks after its first byte. */
#define WATCHDOG_TICK_MS 250

struct watchdog;

/* What the watchdog remembers of one connection between two looks (see watchdog_step). */
struct watchdog_clock {
    uint32_t seen_seq;  /* the connection's request sequence at the last look */
    uint64_t rx_mark;   /* bytes received by then when the connection was idle */
    int started;        /* 1 once bytes of a new request head have been seen */
    int64_t started_ms; /* when they were first seen */
};

/* One look at one connection at now_ms; c starts zeroed for a new connection. seq counts the
 * connection's requests twice: it is odd from the first access-handler call of a request (its
 * headers are complete) to its completion, even between requests. rx(arg, &n) sets n to the
 * bytes received on the connection so far and returns 0, or returns -1 when that is unknown
 * (then nothing is timed); it is only called when needed. Returns 1 when the head of a
 * request has been arriving for more than timeout_ms (close the connection), else 0. Reads no
 * clock and touches nothing but c. */
int watchdog_step(struct watchdog_clock *c, uint32_t seq, int (*rx)(void *arg, uint64_t *n),
                  void *arg, int64_t now_ms, int64_t timeout_ms);

/* The bytes received so far on the TCP socket fd (TCP_INFO's tcpi_bytes_received, Linux
 * 4.1 and later). Returns 0 and sets *n, or -1 when fd is not a TCP socket or the kernel does
 * not say. */
int watchdog_rx_bytes(int fd, uint64_t *n);

/* Start the watchdog thread with a deadline of timeout_ms for every request head. Returns
 * NULL after logging why (out of memory, no thread). Pass the result as the closure of
 * watchdog_on_connection. */
struct watchdog *watchdog_start(int64_t timeout_ms);

/* The MHD_OPTION_NOTIFY_CONNECTION callback (cls: the watchdog): STARTED registers the
 * connection (in *socket_context), CLOSED forgets it. Called by libmicrohttpd's threads. */
void watchdog_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code);

/* Call on the first access-handler call of a request (its headers are complete) and, for the
 * same request, from the completion callback. Lock-free; a no-op for a connection the
 * watchdog does not know. */
void watchdog_request_started(struct MHD_Connection *conn);
void watchdog_request_done(struct MHD_Connection *conn);

/* Stop and join the thread (within about one look at every connection). Call before
 * MHD_stop_daemon(): connections are no longer shut down, but still registered and forgotten.
 * Accepts NULL; idempotent. */
void watchdog_stop(struct watchdog *w);

/* Free w (stopping it first if needed). Call after MHD_stop_daemon(), once libmicrohttpd
 * can no longer call watchdog_on_connection. Accepts NULL. */
void watchdog_free(struct watchdog *w);

#endif
