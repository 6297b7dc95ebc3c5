/* Enqueue deduplication (server/domain/dedup.h): the check of "dedup" naming the bad field,
 * and what each mode does with the job the store found, at the boundaries of its window. */
#include <string.h>

#include "dedup.h"
#include "testlib.h"

static const char *check(const char *key, const char *mode, int64_t seconds, struct dedup *out)
{
    return dedup_check(key, key ? strlen(key) : 0, mode, seconds, out);
}

TEST(valid_dedups)
{
    struct dedup d;
    CHECK(check("k", "active", JOB_NONE, &d) == NULL);
    CHECK_INT(d.mode, DEDUP_ACTIVE);
    CHECK_INT(d.seconds, 0);
    CHECK_STR(d.key, "k");
    CHECK(check("k", "active", -5, &d) == NULL); /* seconds is ignored for active */
    CHECK_INT(d.seconds, 0);
    CHECK(check("k", "window", 1, &d) == NULL);
    CHECK_INT(d.mode, DEDUP_WINDOW);
    CHECK_INT(d.seconds, 1);
    CHECK(check("k", "window", DEDUP_SECONDS_MAX, &d) == NULL);
    CHECK(check("k", "debounce", 0, &d) == NULL);
    CHECK_INT(d.mode, DEDUP_DEBOUNCE);
    CHECK_INT(d.seconds, 0);
    CHECK(check("k", "debounce", DEDUP_SECONDS_MAX, &d) == NULL);
    CHECK_INT(d.seconds, DEDUP_SECONDS_MAX);
    char k[JOB_IDENT_MAX + 1];
    memset(k, 'x', JOB_IDENT_MAX);
    k[JOB_IDENT_MAX] = '\0';
    CHECK(check(k, "active", JOB_NONE, &d) == NULL);
    for (int m = DEDUP_ACTIVE; m < DEDUP_MODE_COUNT; m++) {
        CHECK(check("k", dedup_mode_name((enum dedup_mode)m), 5, &d) == NULL);
        CHECK_INT(d.mode, m);
    }
    CHECK(dedup_mode_name(DEDUP_NONE) == NULL);
    CHECK(dedup_mode_name(DEDUP_MODE_COUNT) == NULL);
}

TEST(bad_dedups_name_the_field)
{
    struct dedup d = {.key = "before", .mode = DEDUP_WINDOW, .seconds = 7};
    char k[JOB_IDENT_MAX + 2];
    memset(k, 'x', JOB_IDENT_MAX + 1);
    k[JOB_IDENT_MAX + 1] = '\0';
    CHECK_STR(check(k, "active", JOB_NONE, &d), "dedup.key");
    CHECK_STR(check("", "active", JOB_NONE, &d), "dedup.key");
    CHECK_STR(check(NULL, "active", JOB_NONE, &d), "dedup.key");
    CHECK_STR(dedup_check("a\0b", 3, "active", JOB_NONE, &d), "dedup.key");
    CHECK_STR(check("k", NULL, 5, &d), "dedup.mode");
    CHECK_STR(check("k", "Active", 5, &d), "dedup.mode");
    CHECK_STR(check("k", "", 5, &d), "dedup.mode");
    CHECK_STR(check("k", "window", JOB_NONE, &d), "dedup.seconds"); /* required */
    CHECK_STR(check("k", "window", 0, &d), "dedup.seconds");
    CHECK_STR(check("k", "window", DEDUP_SECONDS_MAX + 1, &d), "dedup.seconds");
    CHECK_STR(check("k", "debounce", JOB_NONE, &d), "dedup.seconds");
    CHECK_STR(check("k", "debounce", -1, &d), "dedup.seconds");
    CHECK_STR(check("k", "debounce", DEDUP_SECONDS_MAX + 1, &d), "dedup.seconds");
    CHECK_STR(check("", "nope", JOB_NONE, &d), "dedup.key"); /* the first bad field */
    CHECK_STR(d.key, "before");                              /* left alone */
    CHECK_INT(d.seconds, 7);
}

static struct dedup_plan decide(enum dedup_mode mode, int64_t seconds, const struct dedup_hit *hit,
                                int64_t now)
{
    struct dedup d = {.key = "k", .mode = mode, .seconds = seconds};
    return dedup_decide(&d, hit, now);
}

TEST(no_dedup_or_no_hit_creates)
{
    struct dedup_hit h = {JOB_QUEUED, 1000, JOB_NONE};
    struct dedup_plan p = dedup_decide(NULL, &h, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, JOB_NONE);
    p = decide(DEDUP_ACTIVE, 0, NULL, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, JOB_NONE); /* due as the spec says */
    p = decide(DEDUP_WINDOW, 60, NULL, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, JOB_NONE);
    p = decide(DEDUP_DEBOUNCE, 30, NULL, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, 1030);
}

TEST(active_returns_an_unfinished_job)
{
    const enum job_status live[] = {JOB_QUEUED, JOB_RUNNING};
    const enum job_status done[] = {JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLED};
    for (size_t i = 0; i < 2; i++) {
        /* however old, claimed or not */
        struct dedup_hit h = {live[i], 5, 7};
        struct dedup_plan p = decide(DEDUP_ACTIVE, 0, &h, 1000000);
        CHECK_INT(p.action, DEDUP_RETURN_EXISTING);
        CHECK_INT(p.run_at, JOB_NONE);
    }
    for (size_t i = 0; i < 3; i++) {
        struct dedup_hit h = {done[i], 999, JOB_NONE};
        CHECK_INT(decide(DEDUP_ACTIVE, 0, &h, 1000).action, DEDUP_CREATE);
    }
}

TEST(window_counts_the_last_seconds)
{
    /* seconds 60 at now 1000: created_at 941..1000 (sixty seconds) is in the window. */
    struct dedup d = {.key = "k", .mode = DEDUP_WINDOW, .seconds = 60};
    CHECK_INT(dedup_window_start(&d, 1000), 941);
    const enum job_status any[] = {JOB_QUEUED, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED,
                                   JOB_CANCELLED};
    for (size_t i = 0; i < 5; i++) {
        struct dedup_hit h = {any[i], 941, JOB_NONE};
        CHECK_INT(decide(DEDUP_WINDOW, 60, &h, 1000).action, DEDUP_RETURN_EXISTING);
        h.created_at = 940;
        CHECK_INT(decide(DEDUP_WINDOW, 60, &h, 1000).action, DEDUP_CREATE);
        h.created_at = 1000;
        CHECK_INT(decide(DEDUP_WINDOW, 60, &h, 1000).action, DEDUP_RETURN_EXISTING);
    }
    /* seconds 1: the current second only. */
    struct dedup_hit h = {JOB_QUEUED, 1000, JOB_NONE};
    CHECK_INT(decide(DEDUP_WINDOW, 1, &h, 1000).action, DEDUP_RETURN_EXISTING);
    CHECK_INT(decide(DEDUP_WINDOW, 1, &h, 1001).action, DEDUP_CREATE);
    /* As a sliding window: of enqueues tried once a second with seconds = 5, one in five
     * creates. */
    int64_t last = JOB_NONE;
    int created = 0;
    for (int64_t now = 0; now < 100; now++) {
        struct dedup_hit prev = {JOB_SUCCEEDED, last, JOB_NONE};
        struct dedup_plan p = decide(DEDUP_WINDOW, 5, last == JOB_NONE ? NULL : &prev, now);
        if (p.action == DEDUP_CREATE) {
            CHECK(last == JOB_NONE || now - last == 5);
            last = now;
            created++;
        }
    }
    CHECK_INT(created, 20);
}

TEST(debounce_replaces_a_never_claimed_queued_job)
{
    struct dedup_hit h = {JOB_QUEUED, 900, JOB_NONE};
    struct dedup_plan p = decide(DEDUP_DEBOUNCE, 30, &h, 1000);
    CHECK_INT(p.action, DEDUP_REPLACE_EXISTING);
    CHECK_INT(p.run_at, 1030);
    p = decide(DEDUP_DEBOUNCE, 0, &h, 1000);
    CHECK_INT(p.action, DEDUP_REPLACE_EXISTING);
    CHECK_INT(p.run_at, 1000);
    /* Claimed once and requeued: a worker saw that payload; a new job is created. */
    h.claimed_at = 950;
    p = decide(DEDUP_DEBOUNCE, 30, &h, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, 1030);
    const enum job_status other[] = {JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLED};
    for (size_t i = 0; i < 4; i++) {
        struct dedup_hit o = {other[i], 900, JOB_NONE};
        CHECK_INT(decide(DEDUP_DEBOUNCE, 30, &o, 1000).action, DEDUP_CREATE);
    }
}

/* dedup_decide_spec reads the spec's dedup and the found job's status and times. */
TEST(decide_from_a_spec_and_a_stored_job)
{
    struct job_spec sp = {.queue = "q", .payload = "{}", .run_at = JOB_NONE};
    struct job found = {.status = JOB_QUEUED, .created_at = 990, .claimed_at = JOB_NONE};
    /* No dedup key: created as the spec says, whatever was found. */
    struct dedup_plan p = dedup_decide_spec(&sp, &found, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, JOB_NONE);
    sp.dedup_key = "k";
    sp.dedup_mode = DEDUP_ACTIVE;
    sp.dedup_seconds = 123; /* ignored for active */
    CHECK_INT(dedup_decide_spec(&sp, &found, 1000).action, DEDUP_RETURN_EXISTING);
    CHECK_INT(dedup_decide_spec(&sp, NULL, 1000).action, DEDUP_CREATE);
    found.status = JOB_SUCCEEDED;
    CHECK_INT(dedup_decide_spec(&sp, &found, 1000).action, DEDUP_CREATE);
    sp.dedup_mode = DEDUP_WINDOW;
    sp.dedup_seconds = 11; /* 990..1000 */
    CHECK_INT(dedup_decide_spec(&sp, &found, 1000).action, DEDUP_RETURN_EXISTING);
    sp.dedup_seconds = 10;
    CHECK_INT(dedup_decide_spec(&sp, &found, 1000).action, DEDUP_CREATE);
    sp.dedup_mode = DEDUP_DEBOUNCE;
    found.status = JOB_QUEUED;
    p = dedup_decide_spec(&sp, &found, 1000);
    CHECK_INT(p.action, DEDUP_REPLACE_EXISTING);
    CHECK_INT(p.run_at, 1010);
    found.claimed_at = 995;
    p = dedup_decide_spec(&sp, &found, 1000);
    CHECK_INT(p.action, DEDUP_CREATE);
    CHECK_INT(p.run_at, 1010);
}

TEST_MAIN(TEST_ENTRY(valid_dedups), TEST_ENTRY(bad_dedups_name_the_field),
          TEST_ENTRY(no_dedup_or_no_hit_creates), TEST_ENTRY(active_returns_an_unfinished_job),
          TEST_ENTRY(window_counts_the_last_seconds),
          TEST_ENTRY(debounce_replaces_a_never_claimed_queued_job),
          TEST_ENTRY(decide_from_a_spec_and_a_stored_job))
