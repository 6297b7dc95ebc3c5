/* The background thread that promotes due scheduled jobs (at their run_at, to the second),
 * returns or fails expired leases and deletes old finished jobs, every sweep interval, in
 * bounded batches. Never runs in a request. */
#ifndef JOBQ_SWEEPER_H
#define JOBQ_SWEEPER_H

#include <stdint.h>

struct store;
struct sweeper;

/* Start the thread. Borrows s, which must outlive the sweeper. The first sweep runs at once
 * (leases that expired while the server was down, jobs that became due), then every
 * `interval` seconds (>= 1), and also at the start of the epoch second of the earliest
 * scheduled run_at (store_next_due(), sweeper_poke()). Each sweep calls store_sweep() in
 * batches of 500 rows while a batch comes back full, at most 100 batches before pausing 50 ms
 * for request writers. Store errors are logged and retried at the next interval. Returns
 * NULL (logged) when the thread cannot start. */
struct sweeper *sweeper_start(struct store *s, int64_t interval, int64_t retention);

/* A job is scheduled for run_at (epoch seconds): wake the thread at the start of that second
 * if that is sooner than its plan. Safe from any thread, the sweeper's own included (store
 * hooks run inside store_sweep()); accepts NULL. */
void sweeper_poke(struct sweeper *sw, int64_t run_at);

/* Stop the thread, wait for it and free it: returns once the batch in progress, if any, has
 * committed. Accepts NULL. */
void sweeper_stop(struct sweeper *sw);

#endif
