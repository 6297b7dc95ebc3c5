/* Workflows (server/domain/depend.h): what a dependency's status means for a dependent, the
 * plan of a job from its dependencies, the release time, the cancel detail, and the order of
 * a batch with refs (cycles named by an element on them). */
#include <stdlib.h>

#include "depend.h"
#include "testlib.h"

TEST(effect_of_each_status)
{
    CHECK_INT(depend_effect(JOB_SUCCEEDED, DEP_CANCEL), DEPEND_SETTLE);
    CHECK_INT(depend_effect(JOB_SUCCEEDED, DEP_RUN), DEPEND_SETTLE);
    CHECK_INT(depend_effect(JOB_FAILED, DEP_CANCEL), DEPEND_CANCEL);
    CHECK_INT(depend_effect(JOB_CANCELLED, DEP_CANCEL), DEPEND_CANCEL);
    CHECK_INT(depend_effect(JOB_FAILED, DEP_RUN), DEPEND_SETTLE);
    CHECK_INT(depend_effect(JOB_CANCELLED, DEP_RUN), DEPEND_SETTLE);
    const enum job_status waiting[] = {JOB_QUEUED, JOB_RUNNING, JOB_BLOCKED, JOB_STATUS_NONE};
    for (size_t i = 0; i < sizeof waiting / sizeof waiting[0]; i++) {
        CHECK_INT(depend_effect(waiting[i], DEP_CANCEL), DEPEND_WAIT);
        CHECK_INT(depend_effect(waiting[i], DEP_RUN), DEPEND_WAIT);
    }
}

TEST(plan_cancel_wins_then_waiting)
{
    struct depend_plan p = depend_plan(0, 0);
    CHECK_INT(p.status, JOB_QUEUED);
    CHECK_INT(p.pending, 0);
    p = depend_plan(3, 0);
    CHECK_INT(p.status, JOB_BLOCKED);
    CHECK_INT(p.pending, 3);
    CHECK_INT(p.cancel_dep, 0);
    p = depend_plan(3, 42);
    CHECK_INT(p.status, JOB_CANCELLED);
    CHECK_INT(p.cancel_dep, 42);
    CHECK_INT(p.pending, 0);
}

TEST(release_never_earlier_than_its_run_at)
{
    CHECK_INT(depend_release_run_at(100, 200), 200);
    CHECK_INT(depend_release_run_at(300, 200), 300);
    CHECK_INT(depend_release_run_at(200, 200), 200);
}

TEST(purged_job_counts_as_cancelled_unless_it_had_ended)
{
    CHECK_INT(depend_purged(JOB_QUEUED, 0), JOB_CANCELLED);
    CHECK_INT(depend_purged(JOB_BLOCKED, 0), JOB_CANCELLED);
    CHECK_INT(depend_purged(JOB_STATUS_NONE, 0), JOB_CANCELLED); /* a stored "scheduled" */
    CHECK_INT(depend_purged(JOB_SUCCEEDED, 0), JOB_STATUS_NONE); /* counted at its end */
    CHECK_INT(depend_purged(JOB_SUCCEEDED, 1), JOB_SUCCEEDED);   /* its walk was left */
    CHECK_INT(depend_purged(JOB_FAILED, 1), JOB_FAILED);
    CHECK_INT(depend_purged(JOB_CANCELLED, 1), JOB_CANCELLED);
    /* Counted, but the dependents that another dependency cancelled are pinned to it. */
    CHECK_INT(depend_purged(JOB_FAILED, 0), JOB_FAILED);
    CHECK_INT(depend_purged(JOB_CANCELLED, 0), JOB_CANCELLED);
}

TEST(modes_a_status_cancels_or_settles)
{
    CHECK_INT(depend_modes(JOB_FAILED, DEPEND_CANCEL), 1u << DEP_CANCEL);
    CHECK_INT(depend_modes(JOB_CANCELLED, DEPEND_SETTLE), 1u << DEP_RUN);
    CHECK_INT(depend_modes(JOB_SUCCEEDED, DEPEND_CANCEL), 0);
    CHECK_INT(depend_modes(JOB_SUCCEEDED, DEPEND_SETTLE), (1u << DEP_CANCEL) | (1u << DEP_RUN));
    CHECK_INT(depend_modes(JOB_RUNNING, DEPEND_WAIT), (1u << DEP_CANCEL) | (1u << DEP_RUN));
}

TEST(detail_names_the_dependency)
{
    char buf[DEPEND_DETAIL_MAX];
    CHECK_STR(depend_detail(42, buf), "\"dependency 42 did not succeed\"");
    CHECK_STR(depend_detail(INT64_MAX, buf), "\"dependency 9223372036854775807 did not succeed\"");
    CHECK_INT(depend_cancelled_by(DEPEND_FAILED_CODE, "\"dependency 42 did not succeed\"", 42), 1);
    CHECK_INT(depend_cancelled_by(DEPEND_FAILED_CODE, "\"dependency 42 did not succeed\"", 4), 0);
    CHECK_INT(depend_cancelled_by(DEPEND_FAILED_CODE, "\"dependency 421 did not succeed\"", 42), 0);
    CHECK_INT(depend_cancelled_by("expired", "\"dependency 42 did not succeed\"", 42), 0);
    CHECK_INT(depend_cancelled_by(NULL, "\"dependency 42 did not succeed\"", 42), 0);
    CHECK_INT(depend_cancelled_by(DEPEND_FAILED_CODE, NULL, 42), 0);
}

/* A batch of n specs; deps[i] lists the elements i depends on, -1 ended. */
static struct job_spec *batch(size_t n, const int deps[][4], struct job_dep store[][4])
{
    struct job_spec *specs = calloc(n, sizeof *specs);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        for (; k < 4 && deps[i][k] >= 0; k++)
            store[i][k] = (struct job_dep){.id = 0, .index = deps[i][k]};
        specs[i].deps = store[i];
        specs[i].ndeps = k;
    }
    return specs;
}

TEST(order_keeps_the_batch_order_when_it_can)
{
    const int deps[4][4] = {{-1}, {0, -1}, {0, -1}, {1, 2, -1}}; /* a diamond */
    struct job_dep store[4][4];
    struct job_spec *specs = batch(4, deps, store);
    size_t order[4];
    CHECK_INT(depend_order(specs, 4, order), -1);
    for (size_t i = 0; i < 4; i++)
        CHECK_INT(order[i], i);
    free(specs);
}

TEST(order_puts_parents_first)
{
    /* The callback first, its parents after it: each after what it depends on. */
    const int deps[4][4] = {{1, 2, 3, -1}, {3, -1}, {-1}, {-1}};
    struct job_dep store[4][4];
    struct job_spec *specs = batch(4, deps, store);
    size_t order[4];
    CHECK_INT(depend_order(specs, 4, order), -1);
    CHECK_INT(order[0], 2);
    CHECK_INT(order[1], 3);
    CHECK_INT(order[2], 1);
    CHECK_INT(order[3], 0);
    free(specs);
}

TEST(order_names_an_element_on_the_cycle)
{
    /* 0 waits for 1, which is on the cycle 1 -> 2 -> 3 -> 1; 4 is free. */
    const int deps[5][4] = {{1, -1}, {2, -1}, {3, -1}, {1, -1}, {-1}};
    struct job_dep store[5][4];
    struct job_spec *specs = batch(5, deps, store);
    size_t order[5];
    long bad = depend_order(specs, 5, order);
    CHECK(bad >= 1 && bad <= 3);
    free(specs);
    const int self[2][4] = {{-1}, {1, -1}};
    struct job_dep store2[2][4];
    specs = batch(2, self, store2);
    CHECK_INT(depend_order(specs, 2, order), 1);
    free(specs);
}

TEST(order_ignores_id_entries)
{
    struct job_dep ids[2] = {{.id = 7}, {.id = 0, .index = 0}};
    struct job_spec specs[2] = {{.deps = ids, .ndeps = 1}, {.deps = ids, .ndeps = 2}};
    size_t order[2];
    CHECK_INT(depend_order(specs, 2, order), -1);
    CHECK_INT(order[0], 0);
    CHECK_INT(order[1], 1);
}

TEST(order_of_a_wide_batch_is_quick)
{
    /* 1000 elements, the last depending on all the others (a batch with a callback). */
    size_t n = 1000;
    struct job_spec *specs = calloc(n, sizeof *specs);
    struct job_dep *all = calloc(n, sizeof *all);
    for (size_t i = 0; i + 1 < n; i++)
        all[i] = (struct job_dep){.id = 0, .index = (int32_t)i};
    specs[n - 1].deps = all;
    specs[n - 1].ndeps = n - 1;
    size_t *order = calloc(n, sizeof *order);
    CHECK_INT(depend_order(specs, n, order), -1);
    CHECK_INT(order[n - 1], n - 1);
    free(order);
    free(all);
    free(specs);
}

TEST(ids_text_as_the_api_shows_them)
{
    int64_t ids[3] = {1, 42, INT64_MAX};
    char *t = depend_ids_text(ids, 3);
    CHECK_STR(t, "[1,42,9223372036854775807]");
    free(t);
    t = depend_ids_text(ids, 0);
    CHECK_STR(t, "[]");
    free(t);
}

TEST(repeats_are_dropped_keeping_the_first)
{
    int64_t ids[7] = {5, 3, 5, 9, 3, 3, 1};
    unsigned char repeat[7];
    CHECK_INT(depend_repeats(ids, 7, repeat), 3);
    const unsigned char want[7] = {0, 0, 1, 0, 1, 1, 0};
    for (int i = 0; i < 7; i++)
        CHECK_INT(repeat[i], want[i]);
    CHECK_INT(depend_unique(ids, 7), 4);
    CHECK_INT(ids[0], 5);
    CHECK_INT(ids[1], 3);
    CHECK_INT(ids[2], 9);
    CHECK_INT(ids[3], 1);
    int64_t none[3] = {2, 1, 3};
    CHECK_INT(depend_unique(none, 3), 3);
    CHECK_INT(none[0], 2);
    CHECK_INT(depend_unique(none, 1), 1);
    CHECK_INT(depend_unique(none, 0), 0);
}

TEST(walk_stops_at_its_budget)
{
    struct depend_walk w = {.budget = 2};
    for (int64_t i = 1; i <= 5; i++)
        CHECK_INT(depend_walk_push(&w, i * 10), 0);
    int64_t id = 0;
    CHECK_INT(depend_walk_next(&w, &id), 1);
    CHECK_INT(id, 10);
    CHECK_INT(depend_walk_next(&w, &id), 1);
    CHECK_INT(id, 20);
    CHECK_INT(depend_walk_next(&w, &id), 0); /* the budget is spent: 30, 40, 50 are left */
    CHECK_INT(w.n - w.head, 3);
    CHECK_INT(w.ids[w.head], 30);
    depend_walk_clear(&w);
    CHECK_INT(w.budget, 2);
    CHECK_INT(depend_walk_next(&w, &id), 0);
}

TEST_MAIN(TEST_ENTRY(ids_text_as_the_api_shows_them), TEST_ENTRY(walk_stops_at_its_budget),
          TEST_ENTRY(repeats_are_dropped_keeping_the_first), TEST_ENTRY(effect_of_each_status),
          TEST_ENTRY(plan_cancel_wins_then_waiting),
          TEST_ENTRY(release_never_earlier_than_its_run_at),
          TEST_ENTRY(purged_job_counts_as_cancelled_unless_it_had_ended),
          TEST_ENTRY(modes_a_status_cancels_or_settles), TEST_ENTRY(detail_names_the_dependency),
          TEST_ENTRY(order_keeps_the_batch_order_when_it_can), TEST_ENTRY(order_puts_parents_first),
          TEST_ENTRY(order_names_an_element_on_the_cycle), TEST_ENTRY(order_ignores_id_entries),
          TEST_ENTRY(order_of_a_wide_batch_is_quick))
