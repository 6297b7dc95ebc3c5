/* For the counters tests: one counter of one queue, read through counters_snapshot(). */
#ifndef JOBQ_TEST_COUNTERS_UTIL_H
#define JOBQ_TEST_COUNTERS_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "counters.h"

/* The counter c of queue, or -1 when the queue has no row. */
static inline long long counter_value(const char *queue, enum counter c)
{
    size_t n = 0;
    struct counters_row *rows = counters_snapshot(&n);
    long long v = -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].queue, queue) == 0)
            v = (long long)rows[i].v[c];
    free(rows);
    return v;
}

#endif
