/* admit_wait: when an executor starts another group beside those in flight (admit.h). */
#include "admit.h"

/* The hold on a 2-core host for a group's time t and the round trip rtt (admit.h). */
static int64_t hold_2cores(int64_t t, int64_t rtt)
{
    if (t <= 0)
        return 0;
    int64_t far = (t > rtt ? t - rtt : 0) / 4;
    if (rtt * 4 >= t)
        return far;
    return 2 * t - (2 * t - far) * rtt * 4 / t;
}

/* How many times the hold a few waiting calls wait (admit.h): 4 while the round trip is
 * small beside the group's time t, falling on a line to 1 where it is a quarter of it. */
static int64_t few_times(int64_t hold, int64_t t, int64_t rtt)
{
    if (t <= 0 || rtt * 4 >= t)
        return hold;
    return hold * (4 * t - 12 * rtt) / t;
}

int64_t admit_wait(const struct admit_state *s)
{
    if (s->queued == 0)
        return -1;
    if (s->inflight <= 0 || s->queued >= ADMIT_JOIN)
        return 0;
    int cpus = s->cpus < 1 ? 1 : s->cpus;
    int64_t hold = hold_2cores(s->group_us, s->rtt_us) * 2 / cpus;
    if (s->queued < ADMIT_FEW)
        hold = few_times(hold, s->group_us, s->rtt_us);
    return s->since_start_us >= hold ? 0 : hold - s->since_start_us;
}
