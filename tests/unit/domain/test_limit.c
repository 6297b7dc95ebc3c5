/* Flow control by concurrency key (server/domain/limit.h): key and body checks, which limit
 * applies to a key, and the claim-time room and opening time, driven second by second to show
 * that no window of rate_per_seconds seconds ever holds more than rate_jobs claims. */
#include <stdlib.h>
#include <string.h>

#include "limit.h"
#include "testlib.h"

static struct limit mk(const char *key, int64_t max_running, int64_t jobs, int64_t per)
{
    struct limit l = {.max_running = max_running,
                      .rate_jobs = jobs,
                      .rate_per_seconds = per,
                      .paused_until = JOB_NONE};
    snprintf(l.key, sizeof l.key, "%s", key);
    return l;
}

static enum limit_key_kind kind(const char *key)
{
    const char *why = NULL;
    enum limit_key_kind k = limit_key_check(key, strlen(key), &why);
    return k == LIMIT_KEY_INVALID && !why ? (enum limit_key_kind) - 1 : k; /* a why is owed */
}

TEST(limit_keys)
{
    CHECK_INT(kind("tenant:42"), LIMIT_KEY_EXACT);
    CHECK_INT(kind("a/b:c d"), LIMIT_KEY_EXACT);
    CHECK_INT(kind("tenant:*"), LIMIT_KEY_PATTERN);
    CHECK_INT(kind("*"), LIMIT_KEY_PATTERN);
    CHECK_INT(kind(""), LIMIT_KEY_INVALID);
    CHECK_INT(kind("a*b"), LIMIT_KEY_INVALID);
    CHECK_INT(kind("**"), LIMIT_KEY_INVALID);
    CHECK_INT(kind("*a"), LIMIT_KEY_INVALID);
    const char *why = NULL;
    CHECK_INT(limit_key_check("a\0b", 3, &why), LIMIT_KEY_INVALID);
    CHECK(why && strstr(why, "NUL"));
    CHECK_INT(limit_key_check("a*b", 3, &why), LIMIT_KEY_INVALID);
    CHECK(why && strstr(why, "'*'"));
    CHECK_INT(limit_key_check("a*", 2, NULL), LIMIT_KEY_PATTERN); /* why may be NULL */
    /* The length bound, in bytes: 200 pass, 201 do not (a pattern too). */
    char k[LIMIT_KEY_MAX + 2];
    memset(k, 'x', sizeof k);
    CHECK_INT(limit_key_check(k, LIMIT_KEY_MAX, &why), LIMIT_KEY_EXACT);
    CHECK_INT(limit_key_check(k, LIMIT_KEY_MAX + 1, &why), LIMIT_KEY_INVALID);
    CHECK(why && strstr(why, "200"));
    k[LIMIT_KEY_MAX - 1] = '*';
    CHECK_INT(limit_key_check(k, LIMIT_KEY_MAX, &why), LIMIT_KEY_PATTERN);
    CHECK_INT(limit_key_check(k, 0, &why), LIMIT_KEY_INVALID);
}

TEST(job_keys_are_literal)
{
    const char *why = NULL;
    CHECK_INT(limit_job_key_check("tenant:42", 9, &why), 1);
    CHECK_INT(limit_job_key_check("a*b", 3, &why), 1);
    CHECK_INT(limit_job_key_check("*", 1, &why), 1);
    CHECK_INT(limit_job_key_check("", 0, &why), 0);
    CHECK(why != NULL);
    why = NULL;
    CHECK_INT(limit_job_key_check("a\0", 2, &why), 0);
    CHECK(why != NULL);
    char k[LIMIT_KEY_MAX + 1];
    memset(k, '*', sizeof k);
    CHECK_INT(limit_job_key_check(k, LIMIT_KEY_MAX, &why), 1);
    CHECK_INT(limit_job_key_check(k, LIMIT_KEY_MAX + 1, &why), 0);
}

static const char *body(int64_t max_running, int rate, int64_t jobs, int64_t per, struct limit *out)
{
    struct limit_body b = {max_running, rate, jobs, per};
    return limit_body_check(&b, out);
}

TEST(limit_bodies)
{
    struct limit l = mk("k", 9, 9, 9);
    CHECK(body(1, 0, JOB_NONE, JOB_NONE, &l) == NULL);
    CHECK_INT(l.max_running, 1);
    CHECK_INT(l.rate_jobs, 0);
    CHECK_INT(l.rate_per_seconds, 0);
    CHECK_STR(l.key, "k"); /* the key is not the body's */
    CHECK(body(JOB_NONE, 1, 100000, 86400, &l) == NULL);
    CHECK_INT(l.max_running, 0);
    CHECK_INT(l.rate_jobs, 100000);
    CHECK_INT(l.rate_per_seconds, 86400);
    CHECK(body(100000, 1, 1, 1, &l) == NULL);
    CHECK_INT(l.max_running, 100000);

    struct limit before = l;
    CHECK_STR(body(JOB_NONE, 0, JOB_NONE, JOB_NONE, &l), "max_running or rate");
    CHECK_STR(body(0, 0, JOB_NONE, JOB_NONE, &l), "max_running");
    CHECK_STR(body(100001, 1, 5, 5, &l), "max_running");
    CHECK_STR(body(-1, 0, JOB_NONE, JOB_NONE, &l), "max_running");
    CHECK_STR(body(JOB_NONE, 1, JOB_NONE, 60, &l), "rate.jobs");
    CHECK_STR(body(JOB_NONE, 1, 0, 60, &l), "rate.jobs");
    CHECK_STR(body(5, 1, 100001, 60, &l), "rate.jobs");
    CHECK_STR(body(JOB_NONE, 1, 10, JOB_NONE, &l), "rate.per_seconds");
    CHECK_STR(body(JOB_NONE, 1, 10, 0, &l), "rate.per_seconds");
    CHECK_STR(body(JOB_NONE, 1, 10, 86401, &l), "rate.per_seconds");
    CHECK_STR(body(JOB_NONE, 1, JOB_NONE, JOB_NONE, &l), "rate.jobs"); /* "rate": {} */
    CHECK(memcmp(&l, &before, sizeof l) == 0); /* a bad body leaves out alone */
}

TEST(pattern_prefix)
{
    CHECK_INT(limit_pattern_prefix_len("tenant:*"), 7);
    CHECK_INT(limit_pattern_prefix_len("*"), 0);
    CHECK_INT(limit_pattern_prefix_len("tenant:1"), -1);
}

TEST(exact_wins_then_longest_prefix)
{
    struct limit ls[] = {mk("*", 1, 0, 0), mk("t*", 2, 0, 0), mk("tenant:*", 3, 0, 0),
                         mk("tenant:42", 4, 0, 0), mk("tenant:4*", 5, 0, 0)};
    size_t n = sizeof ls / sizeof ls[0];
    CHECK(limit_resolve("tenant:42", ls, n) == &ls[3]); /* exact beats a longer pattern */
    CHECK(limit_resolve("tenant:43", ls, n) == &ls[4]);
    CHECK(limit_resolve("tenant:4", ls, n) == &ls[4]); /* the prefix may be the whole key */
    CHECK(limit_resolve("tenant:5", ls, n) == &ls[2]);
    CHECK(limit_resolve("tenant", ls, n) == &ls[1]);
    CHECK(limit_resolve("other", ls, n) == &ls[0]); /* "*" matches every key */
    CHECK(limit_resolve("", ls, n) == &ls[0]);
    CHECK(limit_resolve("other", ls, 0) == NULL);
    CHECK(limit_resolve("other", &ls[1], n - 1) == NULL);  /* no limit: unlimited */
    CHECK(limit_resolve("tenant:420", &ls[3], 1) == NULL); /* an exact key is not a prefix */
    /* A job key holding '*' is matched literally: "a*" is governed by the pattern "a*" (prefix
     * "a"), and "ab" by it too. */
    struct limit st[] = {mk("a*", 1, 0, 0), mk("a*x", 2, 0, 0)};
    CHECK(limit_resolve("a*", st, 1) == &st[0]);
    CHECK(limit_resolve("ab", st, 1) == &st[0]);
    CHECK(limit_resolve("b*", st, 1) == NULL);
    /* Two limits under one key (a store never holds them): the first wins. */
    struct limit dup[] = {mk("t*", 1, 0, 0), mk("t*", 2, 0, 0), mk("tx", 3, 0, 0),
                          mk("tx", 4, 0, 0)};
    CHECK(limit_resolve("ty", dup, 4) == &dup[0]);
    CHECK(limit_resolve("tx", dup, 4) == &dup[2]);
    /* (an exact limit never holds '*': limit_key_check refuses "a*x") */
    CHECK_INT(kind(st[1].key), LIMIT_KEY_INVALID);
}

/* Every order of the same limits gives the same answer, and the answer obeys the rule
 * written as quantifiers, for every key over a small alphabet. */
TEST(resolution_property)
{
    const char *keys[] = {"*", "a*", "ab*", "abc", "ab", "b*", "ba", "abc*", "a"};
    enum { NK = sizeof keys / sizeof keys[0] };
    struct limit ls[NK], rot[NK];
    for (size_t i = 0; i < NK; i++)
        ls[i] = mk(keys[i], (int64_t)i + 1, 0, 0);
    const char alpha[] = "abc*";
    char key[5];
    unsigned seed = 7;
    for (int trial = 0; trial < 3000; trial++) {
        size_t len = (size_t)(trial % 5);
        for (size_t i = 0; i < len; i++)
            key[i] = alpha[(seed = seed * 1103515245u + 12345u) >> 16 & 3];
        key[len] = '\0';
        size_t m = 1 + (seed >> 8) % NK; /* a subset: the first m of a rotation */
        size_t r = (seed >> 4) % NK;
        for (size_t i = 0; i < NK; i++)
            rot[i] = ls[(i + r) % NK];
        const struct limit *got = limit_resolve(key, rot, m);
        const struct limit *exact = NULL;
        long best = -1;
        for (size_t i = 0; i < m; i++) {
            long p = limit_pattern_prefix_len(rot[i].key);
            if (p < 0 && strcmp(rot[i].key, key) == 0)
                exact = &rot[i];
            if (p >= 0 && strncmp(rot[i].key, key, (size_t)p) == 0 && p > best)
                best = p;
        }
        if (exact) {
            CHECK(got == exact);
        } else if (best < 0) {
            CHECK(got == NULL);
        } else {
            CHECK(got != NULL);
            CHECK_INT(limit_pattern_prefix_len(got->key), best);
            CHECK(strncmp(got->key, key, (size_t)best) == 0);
        }
    }
}

TEST(window_is_per_seconds_whole_seconds)
{
    struct limit l = mk("k", 0, 3, 10);
    CHECK_INT(limit_window_start(&l, 1000), 991); /* 991..1000: ten seconds */
    l.rate_per_seconds = 1;
    CHECK_INT(limit_window_start(&l, 1000), 1000); /* the current second only */
    struct limit none = mk("k", 5, 0, 0);
    CHECK_INT(limit_window_start(&none, 1000), 1001);
    CHECK_INT(limit_window_start(NULL, 1000), 1001);
    /* No window reaches before the longest one's start. */
    l.rate_per_seconds = LIMIT_RATE_SECONDS_MAX;
    CHECK_INT(limit_claims_oldest(100000), limit_window_start(&l, 100000));
    CHECK_INT(limit_claims_oldest(100000), 100000 - 86400 + 1);
}

TEST(concurrency_room_and_open)
{
    struct limit l = mk("k", 3, 0, 0);
    struct limit_usage u = {.running = 0, .paused_until = JOB_NONE};
    CHECK_INT(limit_room(&l, &u, 100), 3);
    CHECK_INT(limit_open_at(&l, &u, 100), 100);
    u.running = 2;
    CHECK_INT(limit_room(&l, &u, 100), 1);
    u.running = 3;
    CHECK_INT(limit_room(&l, &u, 100), 0);
    CHECK_INT(limit_open_at(&l, &u, 100), LIMIT_NEVER);
    u.running = 5; /* the limit was lowered under running jobs */
    CHECK_INT(limit_room(&l, &u, 100), 0);
    CHECK_INT(limit_open_at(&l, &u, 100), LIMIT_NEVER);
    /* No limit: unlimited, whatever runs. */
    CHECK_INT(limit_room(NULL, &u, 100), LIMIT_UNLIMITED);
    CHECK_INT(limit_open_at(NULL, &u, 100), 100);
}

TEST(rate_room_and_open)
{
    struct limit l = mk("k", 0, 3, 10);
    struct limit_claims c[] = {{990, 5}, {995, 1}, {998, 1}};
    struct limit_usage u = {.paused_until = JOB_NONE, .claims = c, .nclaims = 3};
    /* At 1000 the window is 991..1000: two claims; the five at 990 have left it. */
    CHECK_INT(limit_room(&l, &u, 1000), 1);
    CHECK_INT(limit_open_at(&l, &u, 1000), 1000);
    /* Three: full until the oldest counted (995) leaves, at 995 + 10. */
    c[0] = (struct limit_claims){1000, 1};
    CHECK_INT(limit_room(&l, &u, 1000), 0);
    CHECK_INT(limit_open_at(&l, &u, 1000), 1005);
    CHECK_INT(limit_room(&l, &u, 1004), 0);
    CHECK_INT(limit_room(&l, &u, 1005), 1);
    /* Over full (the rate was lowered): open when the rate_jobs-th newest leaves. */
    c[0] = (struct limit_claims){1000, 4};
    CHECK_INT(limit_open_at(&l, &u, 1000), 1010);
    l.rate_jobs = 1;
    CHECK_INT(limit_open_at(&l, &u, 1000), 1010);
    l.rate_jobs = 6;
    CHECK_INT(limit_open_at(&l, &u, 1000), 1005);
    l.rate_jobs = 7;
    CHECK_INT(limit_open_at(&l, &u, 1000), 1000);
    /* A claim dated after now counts as made. */
    struct limit_claims f = {1003, 1};
    struct limit one = mk("k", 0, 1, 10);
    struct limit_usage uf = {.paused_until = JOB_NONE, .claims = &f, .nclaims = 1};
    CHECK_INT(limit_room(&one, &uf, 1000), 0);
    CHECK_INT(limit_open_at(&one, &uf, 1000), 1013);
    /* Both bounds: the smaller room; a full concurrency is NEVER whatever the window. */
    struct limit both = mk("k", 2, 3, 10);
    c[0] = (struct limit_claims){990, 1};
    u.running = 0;
    CHECK_INT(limit_room(&both, &u, 1000), 1); /* rate: 1 left; running: 2 */
    u.running = 1;
    CHECK_INT(limit_room(&both, &u, 1000), 1);
    u.running = 2;
    CHECK_INT(limit_room(&both, &u, 1000), 0);
    CHECK_INT(limit_open_at(&both, &u, 1000), LIMIT_NEVER);
}

/* A claim decided late (its now before the newest second the key counts a claim in) counts
 * in that newest second: deciding at its own now, over the rows a newer claim left after
 * pruning its window, it would find room the window does not have. */
TEST(late_claims_count_in_the_newest_second)
{
    CHECK_INT(limit_claim_second(100, JOB_NONE), 100);
    CHECK_INT(limit_claim_second(100, 98), 100);
    CHECK_INT(limit_claim_second(100, 100), 100);
    CHECK_INT(limit_claim_second(97, 100), 100);
    /* 2 per 2 s: two claims at 100; a claim there pruned the rows before 99. */
    struct limit l = mk("k", 0, 2, 2);
    struct limit_claims kept[] = {{100, 2}};
    struct limit_usage u = {.paused_until = JOB_NONE, .claims = kept, .nclaims = 1};
    int64_t late = 97;                      /* a claim made at 97 that ran after them */
    CHECK_INT(limit_room(&l, &u, late), 0); /* rows dated after now count as made */
    int64_t at = limit_claim_second(late, 100);
    CHECK_INT(at, 100);
    CHECK_INT(limit_room(&l, &u, at), 0);
    /* Its stamp at 100 is still counted at 101; one at 97 would not be (99 and on). */
    CHECK(limit_window_start(&l, 101) <= at);
    CHECK(limit_window_start(&l, 101) > late);
}

TEST(pause_holds_with_or_without_a_limit)
{
    struct limit_usage u = {.paused_until = 1050};
    CHECK_INT(limit_room(NULL, &u, 1000), 0);
    CHECK_INT(limit_open_at(NULL, &u, 1000), 1050);
    CHECK_INT(limit_room(NULL, &u, 1049), 0);
    CHECK_INT(limit_room(NULL, &u, 1050), LIMIT_UNLIMITED); /* paused_until itself is open */
    CHECK_INT(limit_open_at(NULL, &u, 1050), 1050);
    /* The later of the pause and the window. */
    struct limit l = mk("k", 0, 1, 100);
    struct limit_claims c = {1000, 1};
    u.claims = &c;
    u.nclaims = 1;
    CHECK_INT(limit_open_at(&l, &u, 1000), 1100);
    u.paused_until = 1200;
    CHECK_INT(limit_open_at(&l, &u, 1000), 1200);
    u.paused_until = 999; /* a pause that ended */
    CHECK_INT(limit_open_at(&l, &u, 1000), 1100);
    /* A snooze never shortens a pause. */
    CHECK_INT(limit_pause_merge(JOB_NONE, 1050), 1050);
    CHECK_INT(limit_pause_merge(1100, 1050), 1100);
    CHECK_INT(limit_pause_merge(1000, 1050), 1050);
    CHECK_INT(limit_pause_merge(1050, JOB_NONE), 1050);
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 16;
}

/* Drive one key second by second for `secs` seconds under limit l: each second a random
 * demand of jobs to claim is granted min(demand, limit_room()); random running jobs end and
 * random pauses come. Checks against counts kept apart from the module: running never passes
 * max_running; no window of rate_per_seconds consecutive seconds holds more than rate_jobs
 * claims; the room is exactly what the window and running leave (never less); room > 0 iff
 * open_at == now; open_at is the first second at which the room opens when nothing changes
 * (found by scanning); one row per claim gives the same answers as one row per second. */
#define SIM_SECS 300
static void simulate(struct limit l, unsigned seed)
{
    static struct limit_claims rows[SIM_SECS], ones[SIM_SECS * 20];
    int64_t per_sec[SIM_SECS] = {0};
    size_t nrows = 0, nones = 0;
    struct limit_usage u = {.running = 0, .paused_until = JOB_NONE, .claims = rows};
    const int64_t t0 = 1000000;
    for (int64_t s = 0; s < SIM_SECS; s++) {
        int64_t now = t0 + s;
        for (int64_t r = u.running; r > 0; r--) /* each running job ends with p = 1/3 */
            if (rnd(&seed) % 3 == 0)
                u.running--;
        if (rnd(&seed) % 40 == 0)
            u.paused_until = limit_pause_merge(u.paused_until, now + rnd(&seed) % 8);
        u.nclaims = nrows;
        int64_t room = limit_room(&l, &u, now), open = limit_open_at(&l, &u, now);
        /* The room, from counts kept here. */
        int64_t want = LIMIT_UNLIMITED;
        if (l.max_running > 0)
            want = l.max_running - u.running;
        if (l.rate_jobs > 0) {
            int64_t in = 0;
            for (int64_t k = s; k >= 0 && k > s - l.rate_per_seconds; k--)
                in += per_sec[k];
            if (l.rate_jobs - in < want)
                want = l.rate_jobs - in;
        }
        if (u.paused_until > now || want < 0)
            want = 0;
        CHECK_INT(room, want);
        CHECK_INT(room > 0, open == now);
        /* One row per claim: the same answers. */
        struct limit_usage u1 = u;
        u1.claims = ones;
        u1.nclaims = nones;
        CHECK_INT(limit_room(&l, &u1, now), room);
        CHECK_INT(limit_open_at(&l, &u1, now), open);
        /* open_at: the first second with room if nothing changes. */
        if (open != LIMIT_NEVER) {
            CHECK(open >= now && open <= now + l.rate_per_seconds + 8);
            for (int64_t t = now; t < open; t++)
                CHECK_INT(limit_room(&l, &u, t), 0);
            CHECK(limit_room(&l, &u, open) > 0);
        } else {
            CHECK(l.max_running > 0 && u.running >= l.max_running);
        }
        int64_t demand = rnd(&seed) % 6;
        int64_t got = demand < room ? demand : room;
        if (got > 0) {
            rows[nrows++] = (struct limit_claims){now, got};
            for (int64_t k = 0; k < got; k++)
                ones[nones++] = (struct limit_claims){now, 1};
            per_sec[s] = got;
            u.running += got;
        }
        if (l.max_running > 0)
            CHECK(u.running <= l.max_running);
    }
    /* Every window of rate_per_seconds consecutive seconds. */
    for (int64_t s = 0; l.rate_jobs > 0 && s < SIM_SECS; s++) {
        int64_t in = 0;
        for (int64_t k = s; k < SIM_SECS && k < s + l.rate_per_seconds; k++)
            in += per_sec[k];
        CHECK(in <= l.rate_jobs);
    }
}

TEST(claims_never_overshoot_any_window)
{
    const int64_t rates[][2] = {{1, 1}, {1, 5}, {3, 1}, {3, 7}, {10, 4}, {5, 60}, {2, 2}};
    const int64_t maxes[] = {0, 1, 2, 7};
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
            for (unsigned seed = 1; seed <= 4; seed++) {
                simulate(mk("k", maxes[m], rates[r][0], rates[r][1]), seed * 7919u + (unsigned)r);
                if (test_failed) {
                    fprintf(stderr, "rate %lld/%lld, max_running %lld, seed %u\n",
                            (long long)rates[r][0], (long long)rates[r][1], (long long)maxes[m],
                            seed);
                    return;
                }
            }
        }
    }
    /* Concurrency alone, and a pause alone. */
    simulate(mk("k", 3, 0, 0), 11);
    simulate(mk("k", 0, 0, 0), 13);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct limit *)a)->key, ((const struct limit *)b)->key);
}

/* The sorted search answers as limit_resolve does, for every subset of a set of limits and
 * every key over a small alphabet ('*' in a job key included). */
TEST(sorted_resolution_matches)
{
    const char *keys[] = {"*", "a*", "ab*", "abc", "ab", "b*", "ba", "abc*", "a", "a*"};
    enum { NK = sizeof keys / sizeof keys[0] - 1 }; /* the last is a duplicate, never stored */
    struct limit ls[NK], sub[NK];
    for (size_t i = 0; i < NK; i++)
        ls[i] = mk(keys[i], (int64_t)i + 1, 0, 0);
    const char alpha[] = "abc*";
    char key[6];
    unsigned seed = 11;
    for (int trial = 0; trial < 5000; trial++) {
        size_t len = (size_t)(trial % 6);
        for (size_t i = 0; i < len; i++)
            key[i] = alpha[(seed = seed * 1103515245u + 12345u) >> 16 & 3];
        key[len] = '\0';
        size_t m = 0;
        for (size_t i = 0; i < NK; i++)
            if ((seed >> (i + 3)) & 1)
                sub[m++] = ls[i];
        qsort(sub, m, sizeof sub[0], by_key);
        const struct limit *want = limit_resolve(key, sub, m);
        const struct limit *got = limit_resolve_sorted(key, sub, m);
        if (got != want) {
            CHECK(got == want);
            fprintf(stderr, "key \"%s\", %zu limits, seed %u\n", key, m, seed);
            return;
        }
    }
    /* A key of LIMIT_KEY_MAX bytes is governed by a pattern of as many bytes. */
    struct limit big[2];
    char k[LIMIT_KEY_MAX + 1];
    memset(k, 'x', LIMIT_KEY_MAX);
    k[LIMIT_KEY_MAX] = '\0';
    big[0] = mk("*", 1, 0, 0);
    big[1] = mk(k, 2, 0, 0);
    big[1].key[LIMIT_KEY_MAX - 1] = '*';
    CHECK(limit_resolve_sorted(k, big, 2) == &big[1]);
    CHECK(limit_resolve_sorted(k, big, 0) == NULL);
}

/* Each key counts for the one limit that governs it; a pause shows while it lasts, the
 * latest of a pattern's keys. */
TEST(tally_counts_each_key_once)
{
    struct limit ls[] = {mk("t*", 1, 0, 0), mk("tenant:*", 1, 0, 0), mk("tenant:42", 1, 0, 0)};
    for (size_t i = 0; i < 3; i++)
        ls[i].running = 0;
    limit_tally(ls, 3, "tenant:42", 2, JOB_NONE, 100);
    limit_tally(ls, 3, "tenant:7", 3, 150, 100);
    limit_tally(ls, 3, "tenant:8", 1, 120, 100);
    limit_tally(ls, 3, "tx", 4, 90, 100); /* a pause that passed shows nothing */
    limit_tally(ls, 3, "other", 9, 500, 100);
    CHECK_INT(ls[0].running, 4);
    CHECK_INT(ls[0].paused_until, JOB_NONE);
    CHECK_INT(ls[1].running, 4);
    CHECK_INT(ls[1].paused_until, 150);
    CHECK_INT(ls[2].running, 2);
    CHECK_INT(ls[2].paused_until, JOB_NONE);
}

/* A saturated window fills again as soon as it opens: over a long run, a key with constant
 * demand gets exactly rate_jobs claims in each window (the rule does not under-grant). */
TEST(full_demand_gets_the_whole_rate)
{
    struct limit l = mk("k", 0, 4, 6);
    static struct limit_claims rows[600];
    struct limit_usage u = {.paused_until = JOB_NONE, .claims = rows};
    int64_t total = 0;
    for (int64_t now = 0; now < 600; now++) {
        int64_t room = limit_room(&l, &u, now);
        CHECK(room >= 0 && room <= 4);
        if (room > 0) {
            rows[u.nclaims++] = (struct limit_claims){now, room};
            total += room;
        }
    }
    CHECK_INT(total, 4 * 600 / 6);
}

TEST(ordered_keys_hold_one_running_job)
{
    CHECK(limit_key_ordered("fifo:q.fifo/g"));
    CHECK(!limit_key_ordered("fif"));
    CHECK(!limit_key_ordered(NULL));
    CHECK(!limit_key_ordered("tenant:fifo:x"));
    /* Without a limit: max_running 1 alone. */
    struct limit l;
    int has = 0;
    limit_apply_ordered("fifo:q/g", &has, &l);
    CHECK_INT(has, 1);
    CHECK_INT(l.max_running, 1);
    CHECK_INT(l.rate_jobs, 0);
    struct limit_usage u = {.running = 1, .paused_until = JOB_NONE};
    CHECK_INT(limit_room(&l, &u, 100), 0);
    u.running = 0;
    CHECK_INT(limit_room(&l, &u, 100), 1);
    /* A limit that applies keeps its rate; its max_running becomes 1. */
    l = mk("fifo:*", 50, 10, 60);
    has = 1;
    limit_apply_ordered("fifo:q/g", &has, &l);
    CHECK_INT(l.max_running, 1);
    CHECK_INT(l.rate_jobs, 10);
    /* Any other key is left alone. */
    l = mk("k", 50, 0, 0);
    limit_apply_ordered("k", &has, &l);
    CHECK_INT(l.max_running, 50);
    has = 0;
    limit_apply_ordered("k", &has, &l);
    CHECK_INT(has, 0);
}

TEST_MAIN(TEST_ENTRY(limit_keys), TEST_ENTRY(ordered_keys_hold_one_running_job),
          TEST_ENTRY(job_keys_are_literal), TEST_ENTRY(limit_bodies), TEST_ENTRY(pattern_prefix),
          TEST_ENTRY(exact_wins_then_longest_prefix), TEST_ENTRY(resolution_property),
          TEST_ENTRY(window_is_per_seconds_whole_seconds), TEST_ENTRY(concurrency_room_and_open),
          TEST_ENTRY(rate_room_and_open), TEST_ENTRY(late_claims_count_in_the_newest_second),
          TEST_ENTRY(pause_holds_with_or_without_a_limit),
          TEST_ENTRY(claims_never_overshoot_any_window),
          TEST_ENTRY(full_demand_gets_the_whole_rate), TEST_ENTRY(sorted_resolution_matches),
          TEST_ENTRY(tally_counts_each_key_once))
