/* The only place that reads the clock. Tests drive time with clock_set_fake(). */
#ifndef JOBQ_CLOCK_H
#define JOBQ_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Wall-clock epoch seconds (UTC), or the fake time when one is set. Thread-safe. */
int64_t clock_now(void);

/* Wall-clock epoch milliseconds (UTC), or the fake time * 1000 when one is set: for timers
 * that must fire at the start of an epoch second (the sweeper's run_at). Thread-safe. */
int64_t clock_now_ms(void);

/* Monotonic milliseconds, for deadlines and durations; never faked. Thread-safe. */
int64_t clock_mono_ms(void);

/* Monotonic microseconds, for latency measurements. Thread-safe. */
int64_t clock_mono_us(void);

/* Initialize cv (default attributes otherwise) so that pthread_cond_timedwait on it takes
 * deadlines on the monotonic clock of clock_mono_ms() and clock_mono_us(). Returns
 * pthread_cond_init's result. */
int clock_cond_init(pthread_cond_t *cv);

/* A time of milliseconds (microseconds) as a struct timespec: a clock_mono_ms()
 * (clock_mono_us()) deadline for pthread_cond_timedwait on a clock_cond_init condition.
 * These functions can't fail. */
struct timespec clock_ts_ms(int64_t ms);
struct timespec clock_ts_us(int64_t us);

/* Make clock_now() return t (t < 0: back to the real clock). For tests. */
void clock_set_fake(int64_t t);

#endif
