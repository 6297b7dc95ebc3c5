#include "lease.h"

#include "job.h"

int64_t backoff_delay(int64_t base, int64_t max, int64_t attempts, double jitter)
{
    if (attempts < 1)
        attempts = 1;
    if (base < 0)
        base = 0;
    if (max < 0)
        max = 0;
    int64_t d = base;
    for (int64_t i = 1; i < attempts && d < max; i++)
        d = d > max / 2 ? max : d * 2;
    if (d > max)
        d = max;
    if (jitter < 0.0)
        jitter = 0.0;
    if (jitter >= 1.0)
        jitter = 0.999999;
    return d + (int64_t)((double)d * 0.1 * jitter);
}

int64_t job_requeue_at(int ordered, int64_t created_at, int64_t planned)
{
    if (!ordered || created_at == JOB_NONE || created_at > planned)
        return planned;
    return created_at;
}

int job_dead_letter(int retry, int64_t attempts, int64_t max_receive)
{
    return retry && max_receive > 0 && max_receive != JOB_NONE && attempts >= max_receive;
}

int64_t job_heartbeat_lease(int64_t lease_seconds)
{
    return lease_seconds > 0 ? lease_seconds : 0;
}

struct job_lease_end job_lease_end_plan(int retry, int64_t attempts, int64_t max_attempts,
                                        int64_t retry_in, int64_t now, int64_t backoff_base,
                                        int64_t backoff_max, double jitter)
{
    struct job_lease_end e = {.requeue = retry && attempts < max_attempts, .run_at = JOB_NONE};
    if (e.requeue)
        e.run_at =
            now +
            (retry_in >= 0 ? retry_in : backoff_delay(backoff_base, backoff_max, attempts, jitter));
    return e;
}

struct job_snooze job_snooze_plan(int64_t attempts, int has_key, int pause_key, int64_t seconds,
                                  int64_t now)
{
    return (struct job_snooze){
        .status = JOB_QUEUED,
        .run_at = now + seconds,
        .attempts = attempts > 0 ? attempts - 1 : 0,
        .outcome = ATTEMPT_SNOOZED,
        .pause_until = has_key && pause_key ? now + seconds : JOB_NONE,
    };
}
