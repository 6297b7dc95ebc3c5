#include "dedup.h"

#include <string.h>

static const char *const mode_names[DEDUP_MODE_COUNT] = {
    [DEDUP_ACTIVE] = "active", [DEDUP_WINDOW] = "window", [DEDUP_DEBOUNCE] = "debounce"};

const char *dedup_mode_name(enum dedup_mode mode)
{
    return (unsigned)mode < DEDUP_MODE_COUNT ? mode_names[mode] : NULL;
}

const char *dedup_check(const char *key, size_t key_len, const char *mode, int64_t seconds,
                        struct dedup *out)
{
    if (!key || key_len < 1 || key_len > JOB_IDENT_MAX || memchr(key, '\0', key_len))
        return "dedup.key";
    enum dedup_mode m = DEDUP_NONE;
    for (int i = DEDUP_ACTIVE; mode && i < DEDUP_MODE_COUNT; i++)
        if (strcmp(mode, mode_names[i]) == 0)
            m = (enum dedup_mode)i;
    if (m == DEDUP_NONE)
        return "dedup.mode";
    if (m == DEDUP_ACTIVE)
        seconds = 0;
    else if (seconds < (m == DEDUP_WINDOW ? 1 : 0) || seconds > DEDUP_SECONDS_MAX)
        return "dedup.seconds"; /* JOB_NONE (absent) is below every bound */
    *out = (struct dedup){.key = key, .mode = m, .seconds = seconds};
    return NULL;
}

int64_t dedup_window_start(const struct dedup *d, int64_t now)
{
    return now - d->seconds + 1;
}

/* Finished jobs are the three end statuses; any other (queued, running, blocked) is active. */
static int finished(enum job_status s)
{
    return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
}

static int hit_matches(const struct dedup *d, const struct dedup_hit *h, int64_t now)
{
    switch (d->mode) {
    case DEDUP_ACTIVE:
        return !finished(h->status);
    case DEDUP_WINDOW:
        return h->created_at >= dedup_window_start(d, now);
    case DEDUP_DEBOUNCE:
        return h->status == JOB_QUEUED && h->claimed_at == JOB_NONE;
    default:
        return 0;
    }
}

struct dedup_plan dedup_decide(const struct dedup *d, const struct dedup_hit *hit, int64_t now)
{
    struct dedup_plan p = {.action = DEDUP_CREATE, .run_at = JOB_NONE};
    if (!d || d->mode == DEDUP_NONE)
        return p;
    if (d->mode == DEDUP_DEBOUNCE)
        p.run_at = now + d->seconds;
    if (hit && hit_matches(d, hit, now))
        p.action = d->mode == DEDUP_DEBOUNCE ? DEDUP_REPLACE_EXISTING : DEDUP_RETURN_EXISTING;
    return p;
}

struct dedup_plan dedup_decide_spec(const struct job_spec *sp, const struct job *found, int64_t now)
{
    struct dedup d = {.key = sp->dedup_key,
                      .mode = sp->dedup_key ? sp->dedup_mode : DEDUP_NONE,
                      .seconds = sp->dedup_mode == DEDUP_ACTIVE ? 0 : sp->dedup_seconds};
    struct dedup_hit hit;
    if (found)
        hit = (struct dedup_hit){.status = found->status,
                                 .created_at = found->created_at,
                                 .claimed_at = found->claimed_at};
    return dedup_decide(&d, found ? &hit : NULL, now);
}
