/* admit_wait: when an executor starts another group beside those in flight (admit.h). */
#include "admit.h"

/* The hold on a 2-core host for a group's time t, its usual time u (at least t) and the
 * round trip rtt (admit.h). */
static int64_t hold_2cores(int64_t t, int64_t u, int64_t rtt)
{
    if (t <= 0)
        return 0;
    int64_t far = (t > rtt ? t - rtt : 0) / 4;
    if (rtt * 4 >= t)
        return far;
    return 2 * u - (2 * u - far) * rtt * 4 / t;
}

/* How many times the hold a few waiting calls wait (admit.h): 4 while the round trip is
 * small beside the group's time t, falling on a line to 1 where it is a quarter of it. */
static int64_t few_times(int64_t hold, int64_t t, int64_t rtt)
{
    if (t <= 0 || rtt * 4 >= t)
        return hold;
    return hold * (4 * t - 12 * rtt) / t;
}

int admit_free(int cpus)
{
    return cpus >= 4 ? cpus / 2 : 1;
}

int64_t admit_wait(const struct admit_state *s)
{
    if (s->queued == 0)
        return -1;
    if (s->inflight < admit_free(s->cpus) || s->queued >= s->group_max)
        return 0;
    int cpus = s->cpus < 1 ? 1 : s->cpus;
    int64_t usual = s->usual_us > s->group_us ? s->usual_us : s->group_us;
    int64_t hold = hold_2cores(s->group_us, usual, s->rtt_us) * 2 / cpus;
    if (s->queued < ADMIT_FEW)
        hold = few_times(hold, s->group_us, s->rtt_us);
    return s->since_start_us >= hold ? 0 : hold - s->since_start_us;
}

/* The ADMIT_USUAL-th percentile of t's times (0: none). */
static int64_t percentile(const struct admit_times *t)
{
    size_t k = t->n < ADMIT_TIMES ? t->n : ADMIT_TIMES;
    if (k == 0)
        return 0;
    int64_t v[ADMIT_TIMES];
    for (size_t i = 0; i < k; i++) { /* insertion sort: at most 64 values, once a group */
        size_t j = i;
        for (; j > 0 && v[j - 1] > t->us[i]; j--)
            v[j] = v[j - 1];
        v[j] = t->us[i];
    }
    return v[(k - 1) * ADMIT_USUAL / 100];
}

void admit_record(struct admit_times *t, int64_t us)
{
    if (us < 0)
        us = 0;
    if (t->n > 0 && t->usual > 0 && us / 2 > t->usual)
        us = 2 * t->usual; /* a stall (admit.h) */
    t->us[t->n % ADMIT_TIMES] = us;
    t->n++;
    t->usual = percentile(t);
}

int64_t admit_usual(const struct admit_times *t)
{
    return t->usual;
}
