/* The state machine table (server/domain/transition.h) against each backend: every API
 * status x action is run through the store and its outcome (the result, and the status it
 * leaves) compared with the table, so the backends' SQL guards cannot drift from it. Runs on
 * SQLite and on PostgreSQL (test_store_util.h). */
#include "lease.h"
#include "test_store_util.h"
#include "transition.h"

static const enum job_status statuses[] = {JOB_QUEUED, JOB_RUNNING,   JOB_SUCCEEDED,
                                           JOB_FAILED, JOB_CANCELLED, JOB_BLOCKED};
#define NSTATUSES (sizeof statuses / sizeof statuses[0])
#define LEASE 30
#define NO_TOKEN "00000000000000000000000000000000" /* JOB_TOKEN_LEN, never given out */

/* One job brought to a status, in a queue of its own. */
struct subject {
    enum job_status status;
    char queue[32];
    int64_t id;
    char token[JOB_TOKEN_LEN + 1]; /* its latest claim's, or NO_TOKEN */
};

/* Enqueue a job in its own queue at T0 and bring it to `status` at T0. 0, or -1. */
static int make_subject(struct store *s, enum job_status status, int n, struct subject *out)
{
    memset(out, 0, sizeof *out);
    out->status = status;
    snprintf(out->queue, sizeof out->queue, "t%d-%s", n, job_status_name(status));
    snprintf(out->token, sizeof out->token, "%s", NO_TOKEN);
    if (status == JOB_BLOCKED) { /* waits for a job of another queue that never runs */
        char parent_queue[40];
        snprintf(parent_queue, sizeof parent_queue, "%s-parent", out->queue);
        struct job_dep dep = {.id = enqueue(s, parent_queue, 0, T0, T0)};
        struct job_spec sp = spec_of(out->queue, 0, T0);
        sp.deps = &dep;
        sp.ndeps = 1;
        out->id = dep.id > 0 ? enqueue_spec(s, &sp, T0) : -1;
        return out->id > 0 && status_of(s, out->id) == JOB_BLOCKED ? 0 : -1;
    }
    out->id = enqueue(s, out->queue, 0, T0, T0);
    if (out->id < 0)
        return -1;
    struct job j, k;
    enum store_result r = STORE_OK;
    if (status == JOB_CANCELLED) {
        r = store_cancel(s, out->id, T0, &k);
        if (r == STORE_OK)
            job_clear(&k);
        return r == STORE_OK ? 0 : -1;
    }
    if (status == JOB_QUEUED)
        return 0;
    if (claim_one(s, out->queue, T0, &j) != out->id)
        return -1;
    snprintf(out->token, sizeof out->token, "%s", j.lease_token);
    if (status == JOB_SUCCEEDED)
        r = store_complete(s, out->id, j.lease_token, NULL, T0, &k);
    if (status == JOB_FAILED) {
        struct fail_req f = {"boom", NULL, 0, -1};
        r = store_fail(s, out->id, j.lease_token, &f, T0, &k);
    }
    job_clear(&j);
    if (status != JOB_RUNNING && r == STORE_OK)
        job_clear(&k);
    return r == STORE_OK ? 0 : -1;
}

/* The refusal a store result stands for; -1 for a result no transition gives. */
static int refusal_of(enum store_result r)
{
    switch (r) {
    case STORE_OK:
        return JOB_REFUSED_NONE;
    case STORE_LEASE_LOST:
        return JOB_REFUSED_LEASE;
    case STORE_CONFLICT:
        return JOB_REFUSED_CONFLICT;
    default:
        return -1;
    }
}

/* The status the table expects after the action applied at `now` to a job in `from` that was
 * claimed once (attempts 1 of 5): the table's, or the lease-end plan's (the store under test
 * has backoff base 10, max 3600; a requeued job is queued). */
static enum job_status expected_status(struct job_transition t, enum job_status from, int64_t now)
{
    if (t.refusal != JOB_REFUSED_NONE)
        return from;
    if (t.to != JOB_STATUS_NONE)
        return t.to;
    struct job_lease_end e = job_lease_end_plan(1, 1, 5, -1, now, 10, 3600, 0.0);
    return e.requeue ? JOB_QUEUED : JOB_FAILED;
}

/* Run `action` on every status at T0 + 1 (within the lease) and compare with the table. */
static void check_action(enum job_action action)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    const int64_t now = T0 + 1;
    for (size_t i = 0; i < NSTATUSES; i++) {
        struct subject sub;
        CHECK_INT(make_subject(s, statuses[i], (int)i, &sub), 0);
        struct job_transition t = job_transition(sub.status, action);
        struct job j;
        size_t n = 0;
        enum store_result r = STORE_ERROR;
        int refusal = -1;
        switch (action) {
        case JOB_ACT_CLAIM:
            r = claim_caps(s, sub.queue, NULL, 1, LEASE, now, &j, &n);
            CHECK_INT(r, STORE_OK);
            refusal = n == 1 ? JOB_REFUSED_NONE : JOB_REFUSED_UNSEEN;
            if (n == 1) {
                CHECK_INT(j.id, sub.id);
                job_clear(&j);
            }
            break;
        case JOB_ACT_HEARTBEAT:
            r = store_heartbeat(s, sub.id, sub.token, 0, NULL, now, &j);
            break;
        case JOB_ACT_COMPLETE:
            r = store_complete(s, sub.id, sub.token, NULL, now, &j);
            break;
        case JOB_ACT_FAIL: {
            struct fail_req f = {"boom", NULL, 1, -1};
            r = store_fail(s, sub.id, sub.token, &f, now, &j);
            break;
        }
        case JOB_ACT_CANCEL:
            r = store_cancel(s, sub.id, now, &j);
            break;
        case JOB_ACT_RETRY:
            r = store_retry(s, sub.id, now, &j);
            break;
        case JOB_ACT_SNOOZE:
            r = store_snooze(s, sub.id, sub.token, 60, 0, now, &j);
            break;
        default:
            CHECK(0);
        }
        if (action != JOB_ACT_CLAIM) {
            refusal = refusal_of(r);
            if (r == STORE_OK) {
                CHECK_INT(j.status, expected_status(t, sub.status, now));
                job_clear(&j);
            }
        }
        if (refusal != (int)t.refusal)
            fprintf(stderr, "%s of a %s job: store says %s, the table %d\n",
                    job_action_name(action), job_status_name(sub.status), store_result_name(r),
                    (int)t.refusal);
        CHECK_INT(refusal, t.refusal);
        CHECK_INT(status_of(s, sub.id), expected_status(t, sub.status, now));
    }
    store_close(s);
}

TEST(claim)
{
    check_action(JOB_ACT_CLAIM);
}

TEST(heartbeat)
{
    check_action(JOB_ACT_HEARTBEAT);
}

TEST(complete)
{
    check_action(JOB_ACT_COMPLETE);
}

TEST(fail)
{
    check_action(JOB_ACT_FAIL);
}

TEST(cancel)
{
    check_action(JOB_ACT_CANCEL);
}

TEST(retry)
{
    check_action(JOB_ACT_RETRY);
}

TEST(snooze)
{
    check_action(JOB_ACT_SNOOZE);
}

/* The sweeper's expiry: one job in each status, the lease of the running one over; one sweep
 * batch; each job ends where the table says. */
TEST(expire)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct subject sub[NSTATUSES];
    for (size_t i = 0; i < NSTATUSES; i++)
        CHECK_INT(make_subject(s, statuses[i], (int)i, &sub[i]), 0);
    const int64_t now = T0 + LEASE + 1;
    struct sweep_result res;
    memset(&res, 0, sizeof res);
    CHECK_INT(store_sweep(s, now, 86400, 100, &res), STORE_OK);
    int ended = 0;
    for (size_t i = 0; i < NSTATUSES; i++) {
        struct job_transition t = job_transition(sub[i].status, JOB_ACT_EXPIRE);
        CHECK_INT(status_of(s, sub[i].id), expected_status(t, sub[i].status, now));
        ended += t.refusal == JOB_REFUSED_NONE;
    }
    CHECK_INT(res.requeued + res.failed, ended);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(claim), TEST_ENTRY(heartbeat), TEST_ENTRY(complete), TEST_ENTRY(fail),
          TEST_ENTRY(cancel), TEST_ENTRY(retry), TEST_ENTRY(snooze), TEST_ENTRY(expire))
