#include "clock.h"

#include <stdatomic.h>
#include <time.h>

static _Atomic int64_t fake_now = -1;

int64_t clock_now(void)
{
    int64_t f = atomic_load(&fake_now);
    if (f >= 0)
        return f;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t clock_now_ms(void)
{
    int64_t f = atomic_load(&fake_now);
    if (f >= 0)
        return f * 1000;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_mono_ms(void)
{
    return clock_mono_us() / 1000;
}

void clock_set_fake(int64_t t)
{
    atomic_store(&fake_now, t < 0 ? -1 : t);
}
