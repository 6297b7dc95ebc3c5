/* Latency histograms for the load generator: log-linear buckets over nanoseconds.
 *
 * Values below 256 ns are counted exactly; above, each power of two is split into 128
 * buckets, so a recorded value is known to within 0.8% (HdrHistogram with about two and a
 * half significant digits). Values up to 2^40 ns (about 18 minutes) are kept; larger ones
 * count in the last bucket. A histogram is plain memory: zero it with hist_init(), record from
 * one thread, merge the per-thread histograms at the end with hist_merge(). */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 8
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_MAX_BITS 40
#define HIST_BUCKETS (HIST_SUB + (HIST_MAX_BITS - HIST_SUB_BITS + 1) * (HIST_SUB / 2))

struct hist {
    uint64_t count;
    uint64_t max_ns;
    uint64_t buckets[HIST_BUCKETS];
};

/* Empty h. This function can't fail. */
void hist_init(struct hist *h);

/* Count one value of ns nanoseconds (negative values count as 0). This function can't fail. */
void hist_record(struct hist *h, int64_t ns);

/* Add every count of from into into. This function can't fail. */
void hist_merge(struct hist *into, const struct hist *from);

/* The value at quantile q (0 < q <= 1) in nanoseconds: the middle of the bucket that holds
 * the sample of rank ceil(q * count), capped at the largest value recorded. Returns 0 for an
 * empty histogram. */
double hist_quantile_ns(const struct hist *h, double q);

#endif
