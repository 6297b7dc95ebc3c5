#include "hist.h"

#include <string.h>

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
}

/* The bucket of v, and back: the lowest value and the width of bucket i. */
static int bucket_of(uint64_t v)
{
    if (v < HIST_SUB)
        return (int)v;
    int msb = 63 - __builtin_clzll(v);
    if (msb > HIST_MAX_BITS)
        return HIST_BUCKETS - 1;
    int shift = msb - (HIST_SUB_BITS - 1); /* v >> shift lies in [SUB/2, SUB) */
    return HIST_SUB + (shift - 1) * (HIST_SUB / 2) + (int)((v >> shift) - HIST_SUB / 2);
}

static void bucket_range(int i, double *low, double *width)
{
    if (i < HIST_SUB) {
        *low = i;
        *width = 1;
        return;
    }
    int shift = (i - HIST_SUB) / (HIST_SUB / 2) + 1;
    uint64_t top = (uint64_t)((i - HIST_SUB) % (HIST_SUB / 2) + HIST_SUB / 2);
    *low = (double)(top << shift);
    *width = (double)(1ULL << shift);
}

void hist_record(struct hist *h, int64_t ns)
{
    uint64_t v = ns < 0 ? 0 : (uint64_t)ns;
    h->buckets[bucket_of(v)]++;
    h->count++;
    if (v > h->max_ns)
        h->max_ns = v;
}

void hist_merge(struct hist *into, const struct hist *from)
{
    for (int i = 0; i < HIST_BUCKETS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
}

double hist_quantile_ns(const struct hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (q > 1)
        q = 1;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            double low, width;
            bucket_range(i, &low, &width);
            double mid = width > 1 ? low + width / 2 : low;
            return mid > (double)h->max_ns ? (double)h->max_ns : mid;
        }
    }
    return (double)h->max_ns;
}
