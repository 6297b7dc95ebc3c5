#include "limit.h"

#include <stdio.h>
#include <string.h>

/* 1..LIMIT_KEY_MAX bytes and no NUL: the rule every key shares. */
static int key_bytes_ok(const char *key, size_t len, const char **why)
{
    const char *bad = NULL;
    if (len < 1 || len > LIMIT_KEY_MAX)
        bad = "must be 1-200 bytes";
    else if (memchr(key, '\0', len))
        bad = "must not hold a NUL byte";
    if (bad && why)
        *why = bad;
    return bad == NULL;
}

enum limit_key_kind limit_key_check(const char *key, size_t len, const char **why)
{
    if (!key_bytes_ok(key, len, why))
        return LIMIT_KEY_INVALID;
    const char *star = memchr(key, '*', len);
    if (star && star != key + len - 1) {
        if (why)
            *why = "may hold '*' only as its last byte";
        return LIMIT_KEY_INVALID;
    }
    return star ? LIMIT_KEY_PATTERN : LIMIT_KEY_EXACT;
}

int limit_job_key_check(const char *key, size_t len, const char **why)
{
    return key_bytes_ok(key, len, why);
}

static int in_range(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && v <= hi;
}

const char *limit_body_check(const struct limit_body *b, struct limit *out)
{
    int has_max = b->max_running != JOB_NONE;
    if (has_max && !in_range(b->max_running, 1, LIMIT_RUNNING_MAX))
        return "max_running";
    if (b->rate && !in_range(b->rate_jobs, 1, LIMIT_RATE_JOBS_MAX))
        return "rate.jobs";
    if (b->rate && !in_range(b->rate_per_seconds, 1, LIMIT_RATE_SECONDS_MAX))
        return "rate.per_seconds";
    if (!has_max && !b->rate)
        return "max_running or rate";
    out->max_running = has_max ? b->max_running : 0;
    out->rate_jobs = b->rate ? b->rate_jobs : 0;
    out->rate_per_seconds = b->rate ? b->rate_per_seconds : 0;
    return NULL;
}

long limit_pattern_prefix_len(const char *key)
{
    size_t len = strlen(key);
    return len > 0 && key[len - 1] == '*' ? (long)len - 1 : -1;
}

const struct limit *limit_resolve(const char *key, const struct limit *limits, size_t n)
{
    const struct limit *best = NULL;
    long best_len = -1;
    for (size_t i = 0; i < n; i++) {
        long plen = limit_pattern_prefix_len(limits[i].key);
        if (plen < 0) {
            if (strcmp(limits[i].key, key) == 0)
                return &limits[i];
        } else if (plen > best_len && strncmp(limits[i].key, key, (size_t)plen) == 0) {
            best = &limits[i];
            best_len = plen;
        }
    }
    return best;
}

static int has_rate(const struct limit *l)
{
    return l && l->rate_jobs > 0 && l->rate_per_seconds > 0;
}

static struct limit *find_sorted(const char *key, struct limit *limits, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(limits[mid].key, key);
        if (c == 0)
            return &limits[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

struct limit *limit_resolve_sorted(const char *key, struct limit *limits, size_t n)
{
    size_t len = strlen(key);
    struct limit *l = n ? find_sorted(key, limits, n) : NULL;
    if (l && limit_pattern_prefix_len(l->key) < 0)
        return l;
    char probe[LIMIT_KEY_MAX + 2];
    for (size_t p = len < LIMIT_KEY_MAX ? len + 1 : LIMIT_KEY_MAX; n && p-- > 0;) {
        memcpy(probe, key, p); /* "prefix*" for every prefix, the longest first */
        probe[p] = '*';
        probe[p + 1] = '\0';
        if ((l = find_sorted(probe, limits, n)))
            return l;
    }
    return NULL;
}

void limit_tally(struct limit *limits, size_t n, const char *key, int64_t running,
                 int64_t paused_until, int64_t now)
{
    struct limit *l = limit_resolve_sorted(key, limits, n);
    if (!l)
        return;
    l->running += running;
    if (paused_until != JOB_NONE && paused_until > now &&
        (l->paused_until == JOB_NONE || paused_until > l->paused_until))
        l->paused_until = paused_until;
}

int64_t limit_window_start(const struct limit *l, int64_t now)
{
    return has_rate(l) ? now - l->rate_per_seconds + 1 : now + 1;
}

int64_t limit_claim_second(int64_t now, int64_t newest)
{
    return newest != JOB_NONE && newest > now ? newest : now;
}

int64_t limit_claims_oldest(int64_t now)
{
    return now - LIMIT_RATE_SECONDS_MAX + 1;
}

/* The claims of u that the rate of l counts at time t. */
static int64_t counted_at(const struct limit *l, const struct limit_usage *u, int64_t t)
{
    int64_t start = limit_window_start(l, t), sum = 0;
    for (size_t i = 0; i < u->nclaims; i++)
        if (u->claims[i].at >= start)
            sum += u->claims[i].n;
    return sum;
}

int64_t limit_room(const struct limit *l, const struct limit_usage *u, int64_t now)
{
    if (u->paused_until != JOB_NONE && u->paused_until > now)
        return 0;
    int64_t room = LIMIT_UNLIMITED;
    if (l && l->max_running > 0)
        room = l->max_running - u->running;
    if (has_rate(l)) {
        int64_t left = l->rate_jobs - counted_at(l, u, now);
        if (left < room)
            room = left;
    }
    return room < 0 ? 0 : room;
}

/* The earliest t >= now at which the window holds fewer than rate_jobs claims: the counts only
 * fall as t grows (no claim is added), so a binary search over t finds it. */
static int64_t rate_open_at(const struct limit *l, const struct limit_usage *u, int64_t now)
{
    if (!has_rate(l) || counted_at(l, u, now) < l->rate_jobs)
        return now;
    int64_t newest = now;
    for (size_t i = 0; i < u->nclaims; i++)
        if (u->claims[i].at > newest)
            newest = u->claims[i].at;
    if (newest > INT64_MAX - l->rate_per_seconds)
        return LIMIT_NEVER;
    int64_t lo = now, hi = newest + l->rate_per_seconds; /* full at lo, empty at hi */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (counted_at(l, u, mid) < l->rate_jobs)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int64_t limit_open_at(const struct limit *l, const struct limit_usage *u, int64_t now)
{
    if (l && l->max_running > 0 && u->running >= l->max_running)
        return LIMIT_NEVER;
    int64_t at = rate_open_at(l, u, now);
    if (u->paused_until != JOB_NONE && u->paused_until > at)
        at = u->paused_until;
    return at;
}

int64_t limit_pause_merge(int64_t held, int64_t asked)
{
    return held > asked ? held : asked; /* JOB_NONE is INT64_MIN: before any time */
}

int limit_key_ordered(const char *key)
{
    return key && strncmp(key, LIMIT_ORDERED_PREFIX, sizeof LIMIT_ORDERED_PREFIX - 1) == 0;
}

void limit_apply_ordered(const char *key, int *has_limit, struct limit *l)
{
    if (!limit_key_ordered(key))
        return;
    if (!*has_limit) {
        memset(l, 0, sizeof *l);
        snprintf(l->key, sizeof l->key, "%s", key);
        l->paused_until = JOB_NONE;
        l->window_used = JOB_NONE;
        *has_limit = 1;
    }
    l->max_running = 1;
}
