/* The limits read, from its rows to what each limit shows (store_limits.h). */
#include "store_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static void add_limit(struct store_limits_acc *acc, const char *key, int64_t max_running,
                      int64_t rate_jobs, int64_t rate_per_seconds)
{
    if (acc->n == acc->cap) {
        size_t cap = acc->cap ? acc->cap * 2 : 16;
        struct limit *m = realloc(acc->limits, cap * sizeof *m);
        if (!m) {
            acc->oom = 1;
            return;
        }
        acc->limits = m;
        acc->cap = cap;
    }
    struct limit *l = &acc->limits[acc->n++];
    memset(l, 0, sizeof *l);
    snprintf(l->key, sizeof l->key, "%s", key);
    l->max_running = max_running;
    l->rate_jobs = rate_jobs;
    l->rate_per_seconds = rate_jobs ? rate_per_seconds : 0;
    l->paused_until = JOB_NONE;
    l->window_used = rate_jobs && limit_pattern_prefix_len(key) < 0 ? 0 : JOB_NONE;
}

/* The window count of an exact limit's own key; other keys are passed by. */
static void add_window(struct store_limits_acc *acc, const char *key, int64_t n)
{
    struct limit *l = limit_resolve_sorted(key, acc->limits, acc->n);
    if (l && l->window_used != JOB_NONE && strcmp(l->key, key) == 0)
        l->window_used = n;
}

/* Held jobs of a job key, to the limit that governs it. */
static void add_held(struct store_limits_acc *acc, const char *key, int64_t n)
{
    struct limit *l = limit_resolve_sorted(key, acc->limits, acc->n);
    if (l)
        l->held += n;
}

void store_limits_row(struct store_limits_acc *acc, int kind, const char *key, int64_t a, int64_t b,
                      int64_t c)
{
    if (acc->oom || !key)
        return;
    if (kind == STORE_LIMITS_ROW_LIMIT)
        add_limit(acc, key, a, b, c);
    else if (kind == STORE_LIMITS_ROW_RUNNING)
        limit_tally(acc->limits, acc->n, key, a, JOB_NONE, acc->now);
    else if (kind == STORE_LIMITS_ROW_PAUSED)
        limit_tally(acc->limits, acc->n, key, 0, a, acc->now);
    else if (kind == STORE_LIMITS_ROW_WINDOW)
        add_window(acc, key, a);
    else if (kind == STORE_LIMITS_ROW_HELD)
        add_held(acc, key, a);
}

void store_limits_acc_clear(struct store_limits_acc *acc)
{
    free(acc->limits);
    acc->limits = NULL;
    acc->n = acc->cap = 0;
    acc->oom = 0;
}

enum store_result store_limits_take(struct store_limits_acc *acc, const char *key,
                                    struct limit **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (acc->oom) {
        log_error("out of memory reading limits");
        store_limits_acc_clear(acc);
        return STORE_ERROR;
    }
    if (!key) {
        if (acc->n) {
            *out = acc->limits;
            *n = acc->n;
            acc->limits = NULL;
        }
        store_limits_acc_clear(acc);
        return STORE_OK;
    }
    struct limit one;
    enum store_result r = store_limits_take_one(acc, key, &one);
    if (r != STORE_OK)
        return r;
    if (!(*out = malloc(sizeof one))) {
        log_error("out of memory reading a limit");
        return STORE_ERROR;
    }
    **out = one;
    *n = 1;
    return STORE_OK;
}

enum store_result store_limits_take_one(struct store_limits_acc *acc, const char *key,
                                        struct limit *out)
{
    enum store_result r = STORE_NOT_FOUND;
    if (acc->oom) {
        log_error("out of memory reading limits");
        r = STORE_ERROR;
    }
    for (size_t i = 0; r == STORE_NOT_FOUND && i < acc->n; i++) {
        if (strcmp(acc->limits[i].key, key) == 0) {
            *out = acc->limits[i];
            r = STORE_OK;
        }
    }
    store_limits_acc_clear(acc);
    return r;
}
