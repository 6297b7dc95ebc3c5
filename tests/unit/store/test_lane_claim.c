/* The claim over plain jobs and lanes (server/store/lane_claim.h), driven directly with fake
 * primitives: claim order across plain jobs and lane heads, a key's room (max_running and a
 * rate) spent and then its lanes closed, a busy key passed by, a stale head looked at again,
 * and the limit keys a key's lookup names. */
#include <stdlib.h>
#include <string.h>

#include "lane_claim.h"
#include "testlib.h"

#define NOW 1000
#define LANE_JOBS 8

/* A lane's queued jobs, best first; a key's limit and state. */
struct fake {
    int64_t lane_jobs[4][LANE_JOBS]; /* lane l (1..3): its job ids, 0 ends */
    int next[4];                     /* the next job of each lane */
    int64_t prio[4];                 /* the priority of every job of each lane */
    int64_t gone;                    /* a job id take reports as taken by another claimer */
    struct limit limit;              /* applies to key "k" when limit.key[0] */
    int64_t running;
    int busy;           /* key "k" is held by another claimer */
    int closed, claims; /* key_close and key_claimed calls */
};

static enum store_result take(void *p, const struct lane_cand *c, struct job *out)
{
    struct fake *f = p;
    if (c->id == f->gone)
        return STORE_NOT_FOUND;
    memset(out, 0, sizeof *out);
    out->id = c->id;
    return STORE_OK;
}

static enum store_result head(void *p, struct lane_cand *c)
{
    struct fake *f = p;
    int64_t *jobs = f->lane_jobs[c->lane];
    int i = f->next[c->lane]++;
    c->id = i < LANE_JOBS ? jobs[i] : 0;
    c->priority = f->prio[c->lane];
    c->run_at = 0;
    return STORE_OK;
}

static enum store_result key_load(void *p, struct lane_key *k)
{
    struct fake *f = p;
    if (f->busy)
        return STORE_BUSY;
    k->has_limit = f->limit.key[0] != 0;
    k->limit = f->limit;
    k->running = f->running;
    k->paused_until = 0;
    k->window = 0;
    return STORE_OK;
}

static enum store_result key_claimed(void *p, struct lane_key *k)
{
    (void)k;
    ((struct fake *)p)->claims++;
    return STORE_OK;
}

static enum store_result key_window(void *p, const struct lane_key *k, int64_t from,
                                    struct limit_claims *rows, size_t cap, size_t *n)
{
    (void)p;
    (void)from;
    /* The window holds this claim's claims, all made at now (struct lane_key's window). */
    *n = 0;
    if (k->window > 0 && cap > 0)
        rows[(*n)++] = (struct limit_claims){k->now, k->window};
    return STORE_OK;
}

static enum store_result key_close(void *p, const struct lane_key *k, int64_t at)
{
    (void)k;
    (void)at;
    ((struct fake *)p)->closed++;
    return STORE_OK;
}

static const struct lane_claim_ops ops = {take, head, key_load, key_claimed, key_window, key_close};

/* Run a claim of max_jobs over cands: how many were taken (-1: the claim failed), their ids
 * into got[]. */
static int run(struct fake *f, struct lane_cand *cands, size_t n, int max_jobs, int64_t *got)
{
    struct job out[16];
    struct lane_key keys[8] = {{0}};
    size_t taken = 0;
    enum store_result r = lane_claim_run(&ops, f, NOW, cands, n, max_jobs, keys, 8, out, &taken);
    for (size_t i = 0; i < taken; i++)
        got[i] = out[i].id;
    lane_keys_clear(keys, 8);
    return r == STORE_OK ? (int)taken : -1;
}

/* A lane candidate of lane l (its first job as head) with key ckey (NULL: none). */
static struct lane_cand lane(struct fake *f, int64_t l, const char *ckey, int64_t priority)
{
    struct lane_cand c = {.lane = l, .ckey = ckey ? strdup(ckey) : NULL};
    f->prio[l] = priority;
    head(f, &c);
    return c;
}

TEST(plain_jobs_and_lane_heads_in_claim_order)
{
    struct fake f = {.lane_jobs = {{0}, {10, 11, 12}}};
    struct lane_cand c[3] = {{.id = 1, .priority = 5}, lane(&f, 1, NULL, 3), {.id = 2}};
    int64_t got[8];
    /* Priority 5 first, then the lane (3) while it has jobs, then the plain priority 0. */
    CHECK_INT(run(&f, c, 3, 5, got), 5);
    CHECK_INT(got[0], 1);
    CHECK_INT(got[1], 10);
    CHECK_INT(got[2], 11);
    CHECK_INT(got[3], 12);
    CHECK_INT(got[4], 2);
    lane_cands_clear(c, 3);
}

TEST(a_key_gives_its_room_then_closes)
{
    struct fake f = {.lane_jobs = {{0}, {10, 11, 12, 13}, {20, 21}}};
    snprintf(f.limit.key, sizeof f.limit.key, "k");
    f.limit.max_running = 3;
    f.running = 1; /* room 2 */
    struct lane_cand c[2] = {lane(&f, 1, "k", 9), lane(&f, 2, NULL, 1)};
    int64_t got[8];
    CHECK_INT(run(&f, c, 2, 6, got), 4);
    CHECK_INT(got[0], 10);
    CHECK_INT(got[1], 11); /* room spent: the key closes, the other lane flows */
    CHECK_INT(got[2], 20);
    CHECK_INT(got[3], 21);
    CHECK_INT(f.closed, 1);
    CHECK_INT(f.claims, 2);
    lane_cands_clear(c, 2);
}

TEST(a_rate_counts_this_claims_jobs)
{
    struct fake f = {.lane_jobs = {{0}, {10, 11, 12, 13}}};
    snprintf(f.limit.key, sizeof f.limit.key, "k*");
    f.limit.rate_jobs = 3;
    f.limit.rate_per_seconds = 60;
    struct lane_cand c[1] = {lane(&f, 1, "k", 0)};
    int64_t got[8];
    CHECK_INT(run(&f, c, 1, 10, got), 3);
    CHECK_INT(f.closed, 1);
    lane_cands_clear(c, 1);
}

TEST(a_busy_key_is_passed_by_without_closing)
{
    struct fake f = {.lane_jobs = {{0}, {10, 11}}, .busy = 1};
    struct lane_cand c[2] = {lane(&f, 1, "k", 9), {.id = 3}};
    int64_t got[8];
    CHECK_INT(run(&f, c, 2, 3, got), 1);
    CHECK_INT(got[0], 3);
    CHECK_INT(f.closed, 0);
    lane_cands_clear(c, 2);
}

TEST(a_stale_head_is_looked_at_again)
{
    struct fake f = {.lane_jobs = {{0}, {10, 11}}, .gone = 10};
    struct lane_cand c[1] = {lane(&f, 1, NULL, 0)};
    int64_t got[8];
    CHECK_INT(run(&f, c, 1, 1, got), 1);
    CHECK_INT(got[0], 11);
    lane_cands_clear(c, 1);
}

TEST(limit_keys_name_the_key_and_its_prefix_patterns)
{
    char *s = lane_limit_keys_json("a\"b");
    CHECK(s && strcmp(s, "[\"a\\\"b\",\"*\",\"a*\",\"a\\\"*\",\"a\\\"b*\"]") == 0);
    free(s);
    s = lane_limit_keys_json("\xc3\xa9x"); /* é: no pattern ends inside it */
    CHECK(s && strcmp(s, "[\"\xc3\xa9x\",\"*\",\"\xc3\xa9*\",\"\xc3\xa9x*\"]") == 0);
    free(s);
}

TEST_MAIN(TEST_ENTRY(plain_jobs_and_lane_heads_in_claim_order),
          TEST_ENTRY(a_key_gives_its_room_then_closes), TEST_ENTRY(a_rate_counts_this_claims_jobs),
          TEST_ENTRY(a_busy_key_is_passed_by_without_closing),
          TEST_ENTRY(a_stale_head_is_looked_at_again),
          TEST_ENTRY(limit_keys_name_the_key_and_its_prefix_patterns))
