/* The jobqd process: its parts (store, wait queue, sweeper, HTTP server) started in order
 * and stopped in the reverse order, with one cleanup path. main.c parses the command line
 * and waits for a signal; everything between lives here. */
#ifndef JOBQ_DAEMON_H
#define JOBQ_DAEMON_H

#include "config.h"

struct daemon;

/* Start every part for cfg (borrowed: it must outlive the daemon): load the token file,
 * open the store, then the wait queue, the sweeper and the HTTP server, and log where it
 * listens. Returns the daemon, or NULL after logging why (whatever had started is stopped
 * and freed). Call it with SIGTERM, SIGINT and SIGPIPE blocked: every thread it starts
 * inherits the mask. */
struct daemon *daemon_start(const struct config *cfg);

/* Stop gracefully and free d: new requests are refused, parked long polls answer
 * {"jobs": []}, requests in flight get up to `timeout_ms` to finish (store calls that outlive
 * it are abandoned and answer 503), then the HTTP server, the sweeper, the store and last the
 * wait queue the store's threads call into are stopped and freed. Returns 0. When a store call
 * is stuck past the abandon wait (a disk that does not answer) nothing can be freed safely:
 * it logs that and ends the process with _exit(1). Accepts NULL. */
int daemon_stop(struct daemon *d, int timeout_ms);

#endif
