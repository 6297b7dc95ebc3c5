#include "expiry.h"

const char *expiry_check(int64_t expires_at, int64_t expires_in, int64_t now)
{
    if (expires_at != JOB_NONE && expires_in != JOB_NONE)
        return "expires_at and expires_in_seconds";
    if (expires_in != JOB_NONE && (expires_in < 1 || expires_in > EXPIRY_IN_MAX))
        return "expires_in_seconds";
    if (expires_at != JOB_NONE && (expires_at <= now || expires_at > JOB_RUN_AT_MAX))
        return "expires_at";
    return NULL;
}

int64_t expiry_resolve(int64_t expires_at, int64_t expires_in, int64_t now)
{
    if (expires_at != JOB_NONE)
        return expires_at;
    return expires_in != JOB_NONE ? now + expires_in : JOB_NONE;
}

int expiry_passed(int64_t expires_at, int64_t now)
{
    return expires_at != JOB_NONE && now >= expires_at;
}
