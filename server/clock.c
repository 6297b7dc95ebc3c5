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

int clock_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int err = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return err;
}

struct timespec clock_ts_ms(int64_t ms)
{
    return (struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
}

struct timespec clock_ts_us(int64_t us)
{
    return (struct timespec){.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
}

void clock_set_fake(int64_t t)
{
    atomic_store(&fake_now, t < 0 ? -1 : t);
}
