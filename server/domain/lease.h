/* Retry delay policy of the contract. */
#ifndef JOBQ_BACKOFF_H
#define JOBQ_BACKOFF_H

#include <stdint.h>

/* The delay before retry number `attempts` (>= 1): min(max, base * 2^(attempts-1)) seconds,
 * plus jitter * 10% of that (jitter in [0, 1), e.g. rand_unit()), rounded down. Never
 * overflows: large attempts saturate at max. This function can't fail. */
int64_t backoff_delay(int64_t base, int64_t max, int64_t attempts, double jitter);

#endif
