/* The claim over plain jobs and lanes, for both backends (see lane_claim.h). */
#include "lane_claim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* The best candidate not done yet, or NULL. */
static struct lane_cand *best(struct lane_cand *cands, size_t n)
{
    struct lane_cand *b = NULL;
    for (size_t i = 0; i < n; i++) {
        struct lane_cand *c = &cands[i];
        if (c->done || c->id == 0)
            continue;
        if (!b || job_claim_order(c->priority, c->run_at, c->id, b->priority, b->run_at, b->id) < 0)
            b = c;
    }
    return b;
}

/* The key of c among keys[0..*nk), loaded (and added) when new; NULL when keys is full or
 * out of memory (the lane is passed by). */
static enum store_result key_of(const struct lane_claim_ops *ops, void *be, const char *ckey,
                                int64_t now, struct lane_key *keys, size_t *nk, size_t max,
                                struct lane_key **out)
{
    *out = NULL;
    for (size_t i = 0; i < *nk; i++) {
        if (strcmp(keys[i].key, ckey) == 0) {
            *out = &keys[i];
            return STORE_OK;
        }
    }
    if (*nk >= max)
        return STORE_OK;
    struct lane_key *k = &keys[*nk];
    memset(k, 0, sizeof *k);
    k->key = strdup(ckey);
    if (!k->key) {
        log_error("out of memory for a concurrency key");
        return STORE_ERROR;
    }
    (*nk)++;
    k->now = now;
    enum store_result r = ops->key_load(be, k);
    if (r == STORE_BUSY) {
        k->room = 0;
        k->closed = 1; /* another claimer holds it: passed by, not closed in the store */
        *out = k;
        return STORE_OK;
    }
    if (r != STORE_OK)
        return r;
    limit_apply_ordered(k->key, &k->has_limit, &k->limit);
    k->room = lane_key_room(k);
    *out = k;
    return STORE_OK;
}

int64_t lane_key_room(const struct lane_key *k)
{
    struct limit_claims win = {k->now, k->window}; /* what the window counts, as one row */
    struct limit_usage u = {k->running, k->paused_until, &win, 1};
    return limit_room(k->has_limit ? &k->limit : NULL, &u, k->now);
}

/* When k opens again (limit_open_at), over its window's rows when its rate is what holds it. */
static enum store_result open_at(const struct lane_claim_ops *ops, void *be,
                                 const struct lane_key *k, int64_t *at)
{
    struct limit_usage u = {k->running, k->paused_until ? k->paused_until : JOB_NONE, NULL, 0};
    const struct limit *l = k->has_limit ? &k->limit : NULL;
    if (!l || l->rate_jobs <= 0 || (l->max_running > 0 && k->running >= l->max_running)) {
        *at = limit_open_at(l, &u, k->now);
        return STORE_OK;
    }
    /* A window keeps one row per second with a claim, at most this many. */
    size_t cap = (size_t)(l->rate_per_seconds < l->rate_jobs ? l->rate_per_seconds : l->rate_jobs);
    struct limit_claims *rows = malloc(cap * sizeof *rows);
    if (!rows) {
        log_error("out of memory for the window of a concurrency key");
        return STORE_ERROR;
    }
    enum store_result r =
        ops->key_window(be, k, limit_window_start(l, k->now), rows, cap, &u.nclaims);
    u.claims = rows;
    if (r == STORE_OK)
        *at = limit_open_at(l, &u, k->now);
    free(rows);
    return r;
}

/* Close k's lanes until it opens again, unless it has room after all (a window that slid). */
static enum store_result close_key(const struct lane_claim_ops *ops, void *be,
                                   const struct lane_key *k)
{
    int64_t at = LIMIT_NEVER;
    enum store_result r = open_at(ops, be, k, &at);
    return r != STORE_OK || at <= k->now ? r : ops->key_close(be, k, at);
}

/* Mark every lane candidate of key done. */
static void key_done(struct lane_cand *cands, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (cands[i].ckey && strcmp(cands[i].ckey, key) == 0)
            cands[i].done = 1;
    }
}

enum store_result lane_claim_run(const struct lane_claim_ops *ops, void *be, int64_t now,
                                 struct lane_cand *cands, size_t n, int max_jobs,
                                 struct lane_key *keys, size_t nkeys, struct job *out, size_t *got)
{
    size_t nk = 0;
    *got = 0;
    /* Every round takes a job or settles a candidate (done, or a head looked at again after
     * a stale one): bounded by the jobs wanted plus twice the candidates. */
    size_t rounds = (size_t)max_jobs + 2 * n + 1;
    for (size_t round = 0; round < rounds && *got < (size_t)max_jobs; round++) {
        struct lane_cand *c = best(cands, n);
        if (!c)
            break;
        struct lane_key *k = NULL;
        enum store_result r = STORE_OK;
        if (c->ckey) {
            r = key_of(ops, be, c->ckey, now, keys, &nk, nkeys, &k);
            if (r != STORE_OK)
                return r;
            if (!k || k->room <= 0) {
                if (k && !k->closed) {
                    k->closed = 1;
                    r = close_key(ops, be, k);
                    if (r != STORE_OK)
                        return r;
                }
                key_done(cands, n, c->ckey);
                c->done = 1;
                continue;
            }
        }
        r = ops->take(be, c, &out[*got]);
        if (r == STORE_OK) {
            (*got)++;
            if (k) {
                k->running++;
                k->window++;
                k->room = lane_key_room(k);
                r = ops->key_claimed(be, k);
            }
        }
        if (r != STORE_OK && r != STORE_NOT_FOUND)
            return r;
        if (c->lane == 0) {
            c->done = 1;
            continue;
        }
        r = ops->head(be, c); /* the lane's next job, or none */
        if (r != STORE_OK)
            return r;
    }
    return STORE_OK;
}

void lane_cands_clear(struct lane_cand *cands, size_t n)
{
    for (size_t i = 0; cands && i < n; i++) {
        free(cands[i].ckey);
        cands[i].ckey = NULL;
    }
}

void lane_keys_clear(struct lane_key *keys, size_t n)
{
    for (size_t i = 0; keys && i < n; i++) {
        free(keys[i].key);
        keys[i].key = NULL;
    }
}

/* Append s as a JSON string to b (at *len, room for the worst case). */
static void put_json_string(char *b, size_t *len, const char *s, size_t n)
{
    b[(*len)++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            b[(*len)++] = '\\';
            b[(*len)++] = (char)ch;
        } else if (ch < 0x20) {
            *len += (size_t)sprintf(b + *len, "\\u%04x", ch);
        } else {
            b[(*len)++] = (char)ch;
        }
    }
}

char *lane_limit_keys_json(const char *key)
{
    size_t klen = strlen(key);
    /* klen + 2 strings of at most klen + 1 bytes, each escaped to 6 bytes per byte. */
    size_t cap = (klen + 2) * (6 * (klen + 1) + 4) + 3;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    size_t len = 0;
    b[len++] = '[';
    put_json_string(b, &len, key, klen);
    b[len++] = '"';
    for (size_t p = 0; p <= klen; p++) {
        if (p < klen && ((unsigned char)key[p] & 0xC0) == 0x80)
            continue; /* a limit key is UTF-8: it never ends inside a character */
        b[len++] = ',';
        put_json_string(b, &len, key, p);
        b[len++] = '*';
        b[len++] = '"';
    }
    b[len++] = ']';
    b[len] = '\0';
    return b;
}
