/* Workflows (depend.h). */
#include "depend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum depend_effect depend_effect(enum job_status dep, enum dep_mode m)
{
    switch (dep) {
    case JOB_SUCCEEDED:
        return DEPEND_SETTLE;
    case JOB_FAILED:
    case JOB_CANCELLED:
        return m == DEP_RUN ? DEPEND_SETTLE : DEPEND_CANCEL;
    default:
        return DEPEND_WAIT;
    }
}

struct depend_plan depend_plan(int64_t waiting, int64_t cancel_dep)
{
    if (cancel_dep != 0)
        return (struct depend_plan){JOB_CANCELLED, cancel_dep, 0};
    if (waiting > 0)
        return (struct depend_plan){JOB_BLOCKED, 0, waiting};
    return (struct depend_plan){JOB_QUEUED, 0, 0};
}

enum job_status depend_purged(enum job_status s, int todo)
{
    if (s != JOB_SUCCEEDED && s != JOB_FAILED && s != JOB_CANCELLED)
        return JOB_CANCELLED;
    return todo || s != JOB_SUCCEEDED ? s : JOB_STATUS_NONE;
}

unsigned depend_modes(enum job_status s, enum depend_effect want)
{
    unsigned modes = 0;
    for (int m = 0; m < DEP_MODE_COUNT; m++) {
        if (depend_effect(s, (enum dep_mode)m) == want)
            modes |= 1u << m;
    }
    return modes;
}

int64_t depend_release_run_at(int64_t run_at, int64_t now)
{
    return run_at > now ? run_at : now;
}

char *depend_detail(int64_t dep, char buf[DEPEND_DETAIL_MAX])
{
    snprintf(buf, DEPEND_DETAIL_MAX, "\"dependency %" PRId64 " did not succeed\"", dep);
    return buf;
}

int depend_cancelled_by(const char *code, const char *detail, int64_t dep)
{
    char want[DEPEND_DETAIL_MAX];
    return code && detail && strcmp(code, DEPEND_FAILED_CODE) == 0 &&
           strcmp(detail, depend_detail(dep, want)) == 0;
}

struct at_id {
    int64_t id;
    size_t at;
};

static int at_id_cmp(const void *a, const void *b)
{
    const struct at_id *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

long depend_repeats(const int64_t *ids, size_t n, unsigned char *repeat)
{
    memset(repeat, 0, n);
    if (n < 2)
        return 0;
    struct at_id *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = (struct at_id){ids[i], i};
    qsort(v, n, sizeof *v, at_id_cmp);
    long repeats = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].id == v[i - 1].id) {
            repeat[v[i].at] = 1; /* sorted by position within one id: the first one stays */
            repeats++;
        }
    }
    free(v);
    return repeats;
}

long depend_unique(int64_t *ids, size_t n)
{
    unsigned char *repeat = malloc(n ? n : 1);
    long repeats = repeat ? depend_repeats(ids, n, repeat) : -1;
    size_t k = 0;
    for (size_t i = 0; repeats > 0 && i < n; i++)
        if (!repeat[i])
            ids[k++] = ids[i];
    free(repeat);
    return repeats < 0 ? -1 : (long)(repeats ? k : n);
}

char *depend_ids_text(const int64_t *ids, size_t n)
{
    char *text = malloc(n * 21 + 3);
    if (!text)
        return NULL;
    size_t at = 0;
    text[at++] = '[';
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(text + at, 22, i ? ",%" PRId64 : "%" PRId64, ids[i]);
    text[at++] = ']';
    text[at] = '\0';
    return text;
}

int depend_walk_push(struct depend_walk *w, int64_t id)
{
    if (w->n == w->cap) {
        size_t want = w->cap ? w->cap * 2 : 16;
        int64_t *grown = realloc(w->ids, want * sizeof *grown);
        if (!grown)
            return -1;
        w->ids = grown;
        w->cap = want;
    }
    w->ids[w->n++] = id;
    return 0;
}

int depend_walk_next(struct depend_walk *w, int64_t *id)
{
    if (w->head >= w->n || w->visited >= w->budget)
        return 0;
    *id = w->ids[w->head++];
    w->visited++;
    return 1;
}

void depend_walk_clear(struct depend_walk *w)
{
    if (!w)
        return;
    free(w->ids);
    *w = (struct depend_walk){.budget = w->budget};
}

/* The element an index entry of specs[i] names, or n for an id entry. */
static size_t entry_index(const struct job_spec *sp, size_t d, size_t n)
{
    return sp->deps[d].id == 0 && (size_t)sp->deps[d].index < n ? (size_t)sp->deps[d].index : n;
}

/* An element on a cycle among the elements not placed (each of which waits for another one not
 * placed): walk from the first one along its unplaced dependencies n times. */
static long on_cycle(const struct job_spec *specs, size_t n, const unsigned char *done)
{
    size_t at = 0;
    while (at < n && done[at])
        at++;
    for (size_t step = 0; step < n && at < n; step++) {
        size_t next = n;
        for (size_t d = 0; d < specs[at].ndeps && next == n; d++) {
            size_t e = entry_index(&specs[at], d, n);
            if (e < n && !done[e])
                next = e;
        }
        at = next;
    }
    return at < n ? (long)at : 0;
}

long depend_order(const struct job_spec *specs, size_t n, size_t *order)
{
    /* Kahn's algorithm, always taking the lowest ready element, so a batch that lists parents
     * first keeps its order. Reverse edges in one array (first[i]..first[i+1] are the
     * dependents of i). */
    size_t edges = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < specs[i].ndeps; d++)
            edges += entry_index(&specs[i], d, n) < n;
    }
    size_t *indegree = calloc(n + 1, sizeof *indegree);
    size_t *first = calloc(n + 2, sizeof *first);
    size_t *dependents = malloc((edges ? edges : 1) * sizeof *dependents);
    unsigned char *done = calloc(n + 1, 1);
    long bad = -2;
    if (!indegree || !first || !dependents || !done)
        goto out;
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < specs[i].ndeps; d++) {
            size_t e = entry_index(&specs[i], d, n);
            if (e < n) {
                indegree[i]++;
                first[e + 2]++;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        first[i + 2] += first[i + 1];
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < specs[i].ndeps; d++) {
            size_t e = entry_index(&specs[i], d, n);
            if (e < n)
                dependents[first[e + 1]++] = i;
        }
    }
    size_t placed = 0;
    while (placed < n) {
        size_t pick = 0;
        while (pick < n && (done[pick] || indegree[pick] != 0))
            pick++;
        if (pick == n)
            break; /* the rest are on a cycle or wait for one */
        done[pick] = 1;
        order[placed++] = pick;
        for (size_t k = first[pick]; k < first[pick + 1]; k++)
            indegree[dependents[k]]--;
    }
    bad = placed < n ? on_cycle(specs, n, done) : -1;
out:
    free(indegree);
    free(first);
    free(dependents);
    free(done);
    return bad;
}
