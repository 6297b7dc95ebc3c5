/* For backends: store_limits() and the outputs of the limit writes, built from the rows of one
 * read that returns, in this order, the limits (sorted by key bytewise), then the state of the
 * keys they may govern (running jobs per key, paused keys). Both backends read the same rows
 * and hand them here, so what a limit shows is decided once (limit_tally, limit.h). */
#ifndef JOBQ_STORE_LIMITS_H
#define JOBQ_STORE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The rows of a limits read: what the first column of each says it is. */
enum store_limits_row {
    STORE_LIMITS_ROW_LIMIT = 0, /* key, max_running, rate_jobs, rate_per_seconds (0: none) */
    STORE_LIMITS_ROW_RUNNING,   /* a job key and its running jobs */
    STORE_LIMITS_ROW_PAUSED,    /* a job key and its paused_until */
    STORE_LIMITS_ROW_WINDOW,    /* an exact limit's key and its claims in its window now */
    STORE_LIMITS_ROW_HELD       /* a job key and its due queued jobs in lanes closed now */
};

/* The limits of one read as they come (start zeroed, then set now). */
struct store_limits_acc {
    struct limit *limits; /* owned; sorted by key */
    size_t n, cap;
    int64_t now;
    int oom; /* memory ran out: the read fails */
};

/* Add one row of the read: kind, its key (borrowed) and its numbers a, b, c (for a limit
 * max_running, rate_jobs and rate_per_seconds; for a key its running count, paused_until,
 * window count or held jobs in a). Every limit row must come before the first key row. This function can't fail (out
 * of memory is kept in acc->oom). */
void store_limits_row(struct store_limits_acc *acc, int kind, const char *key, int64_t a, int64_t b,
                      int64_t c);

/* Hand over the limits read (every one when key is NULL, else the limit `key` alone) into *out
 * (a new array, NULL when empty; the caller frees it) and *n. Returns STORE_OK, STORE_NOT_FOUND
 * (key given, no such limit) or STORE_ERROR (out of memory, logged). acc is emptied either
 * way. */
enum store_result store_limits_take(struct store_limits_acc *acc, const char *key,
                                    struct limit **out, size_t *n);

/* store_limits_take() of the limit `key` into *out (a copy). Same results. */
enum store_result store_limits_take_one(struct store_limits_acc *acc, const char *key,
                                        struct limit *out);

/* Release what acc holds. Accepts an empty acc. */
void store_limits_acc_clear(struct store_limits_acc *acc);

#endif
