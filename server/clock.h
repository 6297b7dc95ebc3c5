/* The only place that reads the clock. Tests drive time with clock_set_fake(). */
#ifndef JOBQ_CLOCK_H
#define JOBQ_CLOCK_H

#include <stdint.h>

/* Wall-clock epoch seconds (UTC), or the fake time when one is set. Thread-safe. */
int64_t clock_now(void);

/* Wall-clock epoch milliseconds (UTC), or the fake time * 1000 when one is set: for timers
 * that must fire at the start of an epoch second (the sweeper's run_at). Thread-safe. */
int64_t clock_now_ms(void);

/* Monotonic milliseconds, for deadlines and durations; never faked. Thread-safe. */
int64_t clock_mono_ms(void);

/* Monotonic microseconds, for latency measurements. Thread-safe. */
int64_t clock_mono_us(void);

/* Make clock_now() return t (t < 0: back to the real clock). For tests. */
void clock_set_fake(int64_t t);

#endif
