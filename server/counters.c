/* Per-queue job counters and the throughput ring (see counters.h). One mutex guards an
 * open-addressing hash of queue names (indexes into a growing array of rows) and the ring. */
#include "counters.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define SLOTS 16384 /* hash slots: a power of two, above COUNTERS_QUEUES_MAX / 0.75 */

static const struct {
    const char *name, *help;
} info[COUNTER_COUNT] = {
    [COUNTER_ENQUEUED] = {"enqueued", "Jobs created (idempotency hits not counted)."},
    [COUNTER_CLAIMED] = {"claimed", "Jobs handed to a worker by a claim."},
    [COUNTER_SUCCEEDED] = {"succeeded", "Jobs completed (idempotent repeats not counted)."},
    [COUNTER_FAILED] = {"failed", "Jobs that ended failed: a fail without retry, or attempts "
                                  "exhausted by a fail, a lease expiry or a timeout."},
    [COUNTER_RETRIED] = {"retried", "Jobs sent back to queued by a fail with retry, a lease "
                                    "expiry or a timeout."},
    [COUNTER_LEASE_EXPIRED] = {"lease_expired", "Leases the sweeper ended because they were "
                                                "not renewed in time."},
    [COUNTER_TIMED_OUT] = {"timed_out", "Leases the sweeper ended at max_runtime_seconds."},
    [COUNTER_CANCELLED] = {"cancelled", "Jobs cancelled by a request."},
    [COUNTER_EXPIRED] = {"expired", "Queued jobs the sweeper cancelled at their expires_at "
                                    "(error_code \"expired\")."},
    [COUNTER_SNOOZED] = {"snoozed", "Jobs a worker snoozed back to queued (no attempt spent)."},
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int slots[SLOTS]; /* 0: empty; else 1 + the row's index */
static struct counters_row *rows;
static size_t nrows, caprows;
static int other = -1; /* the COUNTERS_OTHER row, once there is one */
static struct counters_point ring[COUNTERS_POINTS];

const char *counter_name(enum counter c)
{
    return c < COUNTER_COUNT ? info[c].name : "unknown";
}

const char *counter_help(enum counter c)
{
    return c < COUNTER_COUNT ? info[c].help : "";
}

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* A new row named queue; -1 when out of memory. Lock held. */
static int add_row(const char *queue)
{
    if (nrows == caprows) {
        size_t cap = caprows ? caprows * 2 : 64;
        struct counters_row *p = realloc(rows, cap * sizeof *p);
        if (!p)
            return -1;
        rows = p;
        caprows = cap;
    }
    struct counters_row *r = &rows[nrows];
    memset(r, 0, sizeof *r);
    snprintf(r->queue, sizeof r->queue, "%s", queue);
    return (int)nrows++;
}

/* The row of queue, made when missing; COUNTERS_OTHER's past COUNTERS_QUEUES_MAX queues;
 * -1 when out of memory (the event is not counted). Lock held. */
static int row_of(const char *queue)
{
    uint32_t i = hash(queue) & (SLOTS - 1);
    for (; slots[i]; i = (i + 1) & (SLOTS - 1))
        if (strcmp(rows[slots[i] - 1].queue, queue) == 0)
            return slots[i] - 1;
    if (nrows - (other >= 0) >= COUNTERS_QUEUES_MAX) {
        if (other < 0)
            other = add_row(COUNTERS_OTHER);
        return other;
    }
    int r = add_row(queue);
    if (r >= 0)
        slots[i] = r + 1;
    return r;
}

/* The ring bucket of epoch second now, emptied when it last held an older bucket; NULL for
 * a time older than the ring holds. Lock held. */
static struct counters_point *bucket(int64_t now)
{
    int64_t at = now - ((now % COUNTERS_STEP) + COUNTERS_STEP) % COUNTERS_STEP;
    int64_t slot = at / COUNTERS_STEP;
    struct counters_point *p =
        &ring[((slot % COUNTERS_POINTS) + COUNTERS_POINTS) % COUNTERS_POINTS];
    if (p->at > at)
        return NULL;
    if (p->at < at)
        *p = (struct counters_point){.at = at};
    return p;
}

/* Lock held. */
static void add_locked(const char *queue, enum counter c, uint64_t n, int64_t now)
{
    if (n == 0 || !queue || c >= COUNTER_COUNT)
        return;
    int r = row_of(queue);
    if (r >= 0)
        rows[r].v[c] += n;
    if (c != COUNTER_ENQUEUED && c != COUNTER_SUCCEEDED && c != COUNTER_FAILED)
        return;
    struct counters_point *p = bucket(now);
    if (!p)
        return;
    if (c == COUNTER_ENQUEUED)
        p->enqueued += n;
    else if (c == COUNTER_SUCCEEDED)
        p->succeeded += n;
    else
        p->failed += n;
}

void counters_add(const char *queue, enum counter c, uint64_t n, int64_t now)
{
    pthread_mutex_lock(&mu);
    add_locked(queue, c, n, now);
    pthread_mutex_unlock(&mu);
}

void counters_sweep(const struct sweep_result *res, int64_t now)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < res->nqueues; i++) {
        const struct sweep_queue *q = &res->queues[i];
        add_locked(q->queue, COUNTER_LEASE_EXPIRED, (uint64_t)q->expired, now);
        add_locked(q->queue, COUNTER_TIMED_OUT, (uint64_t)q->timed_out, now);
        add_locked(q->queue, COUNTER_RETRIED, (uint64_t)q->requeued, now);
        add_locked(q->queue, COUNTER_FAILED, (uint64_t)q->failed, now);
        add_locked(q->queue, COUNTER_EXPIRED, (uint64_t)q->lapsed, now);
    }
    pthread_mutex_unlock(&mu);
}

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const struct counters_row *)a)->queue, ((const struct counters_row *)b)->queue);
}

struct counters_row *counters_snapshot(size_t *n)
{
    *n = 0;
    pthread_mutex_lock(&mu);
    size_t count = nrows;
    struct counters_row *copy = count ? malloc(count * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, rows, count * sizeof *copy);
    pthread_mutex_unlock(&mu);
    if (!copy)
        return NULL;
    qsort(copy, count, sizeof *copy, row_cmp); /* "(" sorts before any queue name */
    *n = count;
    return copy;
}

void counters_throughput(int64_t now, struct counters_point out[COUNTERS_POINTS])
{
    int64_t last = now - ((now % COUNTERS_STEP) + COUNTERS_STEP) % COUNTERS_STEP;
    pthread_mutex_lock(&mu);
    for (int k = 0; k < COUNTERS_POINTS; k++) {
        int64_t at = last - (int64_t)(COUNTERS_POINTS - 1 - k) * COUNTERS_STEP;
        int64_t slot = at / COUNTERS_STEP;
        const struct counters_point *p =
            &ring[((slot % COUNTERS_POINTS) + COUNTERS_POINTS) % COUNTERS_POINTS];
        out[k] = p->at == at ? *p : (struct counters_point){.at = at};
    }
    pthread_mutex_unlock(&mu);
}

void counters_reset(void)
{
    pthread_mutex_lock(&mu);
    free(rows);
    rows = NULL;
    nrows = caprows = 0;
    other = -1;
    memset(slots, 0, sizeof slots);
    memset(ring, 0, sizeof ring);
    pthread_mutex_unlock(&mu);
}
