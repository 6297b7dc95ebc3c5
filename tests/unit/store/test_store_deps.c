/* Workflows (depend.h) in the store: a job with dependencies is blocked and never claimed
 * until they succeed, released in the transaction of the last one's completion; a failed
 * dependency cancels "cancel" dependents down the graph and settles "run" ones; a dependency
 * already ended counts at once; an unknown id is refused with nothing written; a batch is
 * inserted parents first; retry of the failed job puts its cancelled descendants back to
 * blocked; a long cascade is finished by the sweep; a purged job settles its dependents (one
 * that had not ended as a cancel would); the links read. On SQLite and on
 * PostgreSQL (test_store_util.h). */
#include "depend.h"
#include "test_store_util.h"

/* Enqueue one job of queue depending on ids[0..n) with mode m; its id, or -1. */
static int64_t enqueue_after_in(struct store *s, const char *queue, const int64_t *ids, size_t n,
                                enum dep_mode m, int64_t now)
{
    struct job_dep deps[8];
    for (size_t i = 0; i < n; i++)
        deps[i] = (struct job_dep){.id = ids[i]};
    struct job_spec sp = spec_of(queue, 0, now);
    sp.deps = deps;
    sp.ndeps = n;
    sp.on_dependency_failure = m;
    return enqueue_spec(s, &sp, now);
}

/* Enqueue one job of "q" depending on ids[0..n) with mode m; its id, or -1. */
static int64_t enqueue_after(struct store *s, const int64_t *ids, size_t n, enum dep_mode m,
                             int64_t now)
{
    return enqueue_after_in(s, "q", ids, n, m, now);
}

/* Enqueue a chain longer than one transaction's walk (DEPEND_STEP_MAX + 50 "cancel"
 * dependents one after the other) behind a new job *first; *last is its end. 1 when done. */
static int enqueue_chain(struct store *s, int64_t *first, int64_t *last)
{
    int64_t prev = *first = enqueue(s, "q", 0, T0, T0);
    for (int i = 0; i < DEPEND_STEP_MAX + 50; i++) {
        *last = enqueue_after(s, &prev, 1, DEP_CANCEL, T0);
        if (*last <= 0)
            return 0;
        prev = *last;
    }
    return *first > 0;
}

/* Claim job id (the only claimable one of "q") and complete it; 1 when both worked. */
static int run_job(struct store *s, int64_t id, int64_t now)
{
    struct job j;
    if (claim_one(s, "q", now, &j) != id) {
        job_clear(&j);
        return 0;
    }
    struct job done;
    enum store_result r = store_complete(s, id, j.lease_token, "{\"ok\":1}", now, &done);
    job_clear(&j);
    job_clear(&done);
    return r == STORE_OK;
}

/* Claim job id (the only claimable one of queue) and fail it for good. */
static int fail_job_in(struct store *s, const char *queue, int64_t id, int64_t now)
{
    struct job j;
    if (claim_one(s, queue, now, &j) != id) {
        job_clear(&j);
        return 0;
    }
    struct fail_req f = {.error_code = "boom", .retry = 0, .retry_in_seconds = -1};
    struct job out;
    enum store_result r = store_fail(s, id, j.lease_token, &f, now, &out);
    job_clear(&j);
    job_clear(&out);
    return r == STORE_OK;
}

/* Claim job id (the only claimable one of "q") and fail it for good. */
static int fail_job(struct store *s, int64_t id, int64_t now)
{
    return fail_job_in(s, "q", id, now);
}

/* 1 when job id is cancelled with the detail that names dependency dep. */
static int cancelled_by(struct store *s, int64_t id, int64_t dep)
{
    struct job j;
    if (store_get(s, id, &j) != STORE_OK)
        return 0;
    int by = j.status == JOB_CANCELLED && depend_cancelled_by(j.error_code, j.error_detail, dep);
    if (!by)
        fprintf(stderr, "job %lld: status %d, %s %s, not cancelled by %lld\n", (long long)id,
                (int)j.status, j.error_code ? j.error_code : "-",
                j.error_detail ? j.error_detail : "-", (long long)dep);
    job_clear(&j);
    return by;
}

TEST(blocked_until_every_dependency_succeeds)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0), b = enqueue(s, "q", 0, T0, T0);
    int64_t ab[2] = {a, b};
    int64_t c = enqueue_after(s, ab, 2, DEP_CANCEL, T0);
    CHECK(a > 0 && b > 0 && c > 0);
    CHECK_INT(status_of(s, c), JOB_BLOCKED);
    struct job j;
    CHECK_INT(store_get(s, c, &j), STORE_OK);
    char want[64];
    snprintf(want, sizeof want, "[%lld,%lld]", (long long)a, (long long)b);
    CHECK_STR(j.depends_on, want);
    job_clear(&j);
    CHECK(run_job(s, a, T0 + 1));
    CHECK_INT(status_of(s, c), JOB_BLOCKED);
    /* Only b is claimable: the blocked job is never claimed. */
    CHECK(run_job(s, b, T0 + 2));
    CHECK_INT(status_of(s, c), JOB_QUEUED);
    CHECK_INT(store_get(s, c, &j), STORE_OK);
    CHECK_INT(j.run_at, T0 + 2); /* released at the completion: max(run_at, now) */
    job_clear(&j);
    CHECK(run_job(s, c, T0 + 3));
    CHECK(counts_exact(s, "q", T0 + 3));
    store_close(s);
}

TEST(failure_cancels_down_the_graph_and_settles_run_dependents)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    int64_t b = enqueue_after(s, &a, 1, DEP_CANCEL, T0);
    int64_t c = enqueue_after(s, &b, 1, DEP_CANCEL, T0);
    int64_t cleanup = enqueue_after(s, &b, 1, DEP_RUN, T0);
    CHECK(fail_job(s, a, T0 + 1));
    CHECK_INT(status_of(s, b), JOB_CANCELLED);
    CHECK_INT(status_of(s, c), JOB_CANCELLED);
    CHECK_INT(status_of(s, cleanup), JOB_QUEUED);
    struct job j;
    CHECK_INT(store_get(s, b, &j), STORE_OK);
    CHECK_STR(j.error_code, "dependency_failed");
    char want[64];
    snprintf(want, sizeof want, "\"dependency %lld did not succeed\"", (long long)a);
    CHECK_STR(j.error_detail, want);
    job_clear(&j);
    CHECK_INT(store_get(s, c, &j), STORE_OK);
    snprintf(want, sizeof want, "\"dependency %lld did not succeed\"", (long long)b);
    CHECK_STR(j.error_detail, want);
    job_clear(&j);
    CHECK(counts_exact(s, "q", T0 + 1));
    store_close(s);
}

TEST(ended_dependency_counts_at_once_and_unknown_is_refused)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    CHECK(run_job(s, a, T0));
    int64_t b = enqueue(s, "q", 0, T0, T0);
    CHECK(fail_job(s, b, T0));
    int64_t after_a = enqueue_after(s, &a, 1, DEP_CANCEL, T0 + 1);
    CHECK_INT(status_of(s, after_a), JOB_QUEUED);
    int64_t after_b = enqueue_after(s, &b, 1, DEP_CANCEL, T0 + 1);
    CHECK_INT(status_of(s, after_b), JOB_CANCELLED);
    int64_t run_b = enqueue_after(s, &b, 1, DEP_RUN, T0 + 1);
    CHECK_INT(status_of(s, run_b), JOB_QUEUED);
    /* An unknown id: not found, nothing written. */
    struct job_dep deps[2] = {{.id = a}, {.id = 999999}};
    struct job_spec sp = spec_of("q", 0, T0);
    sp.deps = deps;
    sp.ndeps = 2;
    struct store_call call = {.kind = STORE_CALL_ENQUEUE, .now = T0};
    struct job out;
    int created = 0;
    call.enqueue =
        (struct store_enqueue_call){.specs = &sp, .n = 1, .out = &out, .created = &created};
    int64_t before = jobs_int("count(*)", "1=1");
    CHECK_INT(store_call_run(s, &call), STORE_NOT_FOUND);
    CHECK_INT(call.enqueue.missing_spec, 0);
    CHECK_INT(call.enqueue.missing_id, 999999);
    CHECK_INT(jobs_int("count(*)", "1=1"), before);
    store_close(s);
}

TEST(batch_inserts_parents_first)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    /* [callback depends on 1 and 2, 1, 2]: the callback is inserted last. */
    struct job_dep cb[2] = {{.id = 0, .index = 1}, {.id = 0, .index = 2}};
    struct job_spec sp[3] = {spec_of("q", 0, T0), spec_of("q", 0, T0), spec_of("q", 0, T0)};
    sp[0].deps = cb;
    sp[0].ndeps = 2;
    sp[0].on_dependency_failure = DEP_RUN;
    struct job out[3];
    int created[3];
    CHECK_INT(store_enqueue(s, sp, 3, T0, out, created), STORE_OK);
    CHECK(out[0].id > out[1].id && out[0].id > out[2].id);
    CHECK_INT(out[0].status, JOB_BLOCKED);
    int64_t ids[3] = {out[0].id, out[1].id, out[2].id};
    for (int i = 0; i < 3; i++)
        job_clear(&out[i]);
    CHECK(fail_job(s, ids[1], T0 + 1));
    CHECK_INT(status_of(s, ids[0]), JOB_BLOCKED);
    CHECK(run_job(s, ids[2], T0 + 2));
    CHECK_INT(status_of(s, ids[0]), JOB_QUEUED);
    struct job_link *links = NULL;
    size_t n = 0;
    int more = 0;
    CHECK_INT(store_links(s, ids[0], 0, &links, &n, &more), STORE_OK);
    CHECK_INT(n, 2);
    CHECK_INT(links[0].id, ids[1]);
    CHECK_INT(links[0].status, JOB_FAILED);
    CHECK_INT(links[1].status, JOB_SUCCEEDED);
    CHECK_STR(links[1].result, "{\"ok\":1}");
    job_links_free(links, n);
    CHECK_INT(store_links(s, ids[1], 1, &links, &n, &more), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(links[0].id, ids[0]);
    job_links_free(links, n);
    CHECK_INT(store_links(s, 999999, 0, &links, &n, &more), STORE_NOT_FOUND);
    store_close(s);
}

/* A batch sent again: the elements whose idempotency_key is taken answer their jobs and
 * create nothing, and new elements that depend on them wait for those jobs; an element that a
 * failed dependency cancels at once cancels its "cancel" dependents of the batch and settles
 * its "run" ones; a key given twice in one batch gives one job. */
TEST(batch_with_keys_sent_again_links_to_the_jobs_it_hit)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t bad = enqueue(s, "q", 0, T0, T0);
    CHECK(fail_job(s, bad, T0));
    struct job_dep on0 = {.index = 0}, on1 = {.index = 1}, on2 = {.index = 2};
    struct job_dep on_bad = {.id = bad};
    struct job_spec sp[6];
    for (int i = 0; i < 6; i++)
        sp[i] = spec_of("q", 0, T0);
    sp[0].idempotency_key = "a";
    sp[1].idempotency_key = "c";
    sp[1].deps = &on0, sp[1].ndeps = 1;
    sp[2].deps = &on_bad, sp[2].ndeps = 1; /* cancelled at once */
    sp[3].deps = &on2, sp[3].ndeps = 1;    /* cancelled by element 2 */
    sp[4].deps = &on2, sp[4].ndeps = 1;    /* runs anyway */
    sp[4].on_dependency_failure = DEP_RUN;
    sp[5].deps = &on1, sp[5].ndeps = 1;
    struct job out[6];
    int created[6];
    CHECK_INT(store_enqueue(s, sp, 1, T0, out, created), STORE_OK);
    int64_t a = out[0].id;
    job_clear(&out[0]);
    /* Element 1 names the job element 0 hits twice, by its id and by its ref: it counts once. */
    struct job_dep on_a_twice[2] = {{.id = a}, {.index = 0}};
    sp[1].deps = on_a_twice, sp[1].ndeps = 2;
    CHECK_INT(store_enqueue(s, sp, 6, T0 + 1, out, created), STORE_OK);
    CHECK_INT(created[0], 0);
    CHECK_INT(out[0].id, a);
    for (int i = 1; i < 6; i++)
        CHECK_INT(created[i], 1);
    CHECK_INT(out[1].status, JOB_BLOCKED);
    char want[32];
    snprintf(want, sizeof want, "[%lld]", (long long)a);
    CHECK_STR(out[1].depends_on, want);
    CHECK_INT(out[2].status, JOB_CANCELLED);
    CHECK_STR(out[2].error_code, DEPEND_FAILED_CODE);
    char detail[DEPEND_DETAIL_MAX];
    CHECK_STR(out[2].error_detail, depend_detail(bad, detail));
    CHECK_INT(out[3].status, JOB_CANCELLED);
    CHECK_STR(out[3].error_detail, depend_detail(out[2].id, detail));
    CHECK_INT(out[4].status, JOB_QUEUED);
    CHECK_INT(out[5].status, JOB_BLOCKED);
    int64_t c = out[1].id, last = out[5].id, runs = out[4].id;
    for (int i = 0; i < 6; i++)
        job_clear(&out[i]);
    /* The job it hit releases the new element when it completes, and so on down. */
    struct job j;
    CHECK_INT(claim_one(s, "q", T0 + 2, &j), a);
    struct job done;
    CHECK_INT(store_complete(s, a, j.lease_token, "{}", T0 + 2, &done), STORE_OK);
    job_clear(&j);
    job_clear(&done);
    CHECK_INT(status_of(s, c), JOB_QUEUED);
    CHECK_INT(status_of(s, last), JOB_BLOCKED);
    CHECK_INT(status_of(s, runs), JOB_QUEUED);
    /* One key twice in a batch: one job, the second element is the first one's; an element
     * that names both waits for that one job, once. */
    struct job_spec twice[3] = {spec_of("t", 0, T0), spec_of("t", 0, T0), spec_of("t", 0, T0)};
    twice[0].idempotency_key = twice[1].idempotency_key = "t";
    struct job_dep on_both[2] = {{.index = 0}, {.index = 1}};
    twice[2].deps = on_both, twice[2].ndeps = 2;
    CHECK_INT(store_enqueue(s, twice, 3, T0 + 3, out, created), STORE_OK);
    CHECK_INT(created[0] + created[1], 1);
    CHECK_INT(out[0].id, out[1].id);
    CHECK_INT(out[2].status, JOB_BLOCKED);
    int64_t t = out[0].id, after_t = out[2].id;
    for (int i = 0; i < 3; i++)
        job_clear(&out[i]);
    CHECK_INT(claim_one(s, "t", T0 + 4, &j), t);
    CHECK_INT(store_complete(s, t, j.lease_token, "{}", T0 + 4, &done), STORE_OK);
    job_clear(&j);
    job_clear(&done);
    CHECK_INT(status_of(s, after_t), JOB_QUEUED);
    store_close(s);
}

/* An enqueue sent again after the job it depended on was deleted (a purge, the retention):
 * its idempotency_key answers the job it made, as ever; nothing is looked up or written for
 * its dependencies. Alone, and as an element of a batch beside a new one. */
TEST(keyed_enqueue_sent_again_after_its_dependency_is_gone)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t d = enqueue(s, "q", 0, T0, T0);
    struct job_dep on_d = {.id = d}, on0 = {.index = 0};
    struct job_spec sp[2] = {spec_of("q", 0, T0), spec_of("q", 0, T0)};
    sp[0].idempotency_key = "rk";
    sp[0].deps = &on_d, sp[0].ndeps = 1;
    sp[1].deps = &on0, sp[1].ndeps = 1;
    int64_t j = enqueue_spec(s, &sp[0], T0);
    CHECK(j > 0);
    CHECK(run_job(s, d, T0 + 1));
    size_t deleted = 0;
    CHECK_INT(store_purge(s, "q", JOB_SUCCEEDED, 10, T0 + 2, &deleted), STORE_OK);
    CHECK_INT(deleted, 1);
    struct job out[2];
    int created[2] = {1, 1};
    enum store_result r = store_enqueue(s, sp, 1, T0 + 3, out, created);
    CHECK(r == STORE_OK || r == STORE_EXISTS);
    CHECK_INT(created[0], 0);
    CHECK_INT(out[0].id, j);
    job_clear(&out[0]);
    CHECK_INT(store_enqueue(s, sp, 2, T0 + 3, out, created), STORE_OK);
    CHECK_INT(created[0], 0);
    CHECK_INT(out[0].id, j);
    CHECK_INT(created[1], 1);
    CHECK_INT(out[1].status, JOB_BLOCKED); /* j is queued: not ended */
    for (int i = 0; i < 2; i++)
        job_clear(&out[i]);
    store_close(s);
}

TEST(retry_resumes_a_failed_workflow)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    int64_t b = enqueue_after(s, &a, 1, DEP_CANCEL, T0);
    int64_t c = enqueue_after(s, &b, 1, DEP_CANCEL, T0);
    CHECK(fail_job(s, a, T0 + 1));
    CHECK_INT(status_of(s, c), JOB_CANCELLED);
    struct job j;
    CHECK_INT(store_retry(s, a, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(status_of(s, a), JOB_QUEUED);
    CHECK_INT(status_of(s, b), JOB_BLOCKED);
    CHECK_INT(status_of(s, c), JOB_BLOCKED);
    CHECK(run_job(s, a, T0 + 3));
    CHECK(run_job(s, b, T0 + 4));
    CHECK(run_job(s, c, T0 + 5));
    CHECK(counts_exact(s, "q", T0 + 5));
    store_close(s);
}

TEST(cancel_of_a_blocked_job_and_of_its_parent)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    int64_t b = enqueue_after(s, &a, 1, DEP_CANCEL, T0);
    int64_t c = enqueue_after(s, &a, 1, DEP_CANCEL, T0);
    struct job j;
    CHECK_INT(store_cancel(s, b, T0 + 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_CANCELLED);
    job_clear(&j);
    CHECK_INT(store_cancel(s, a, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(status_of(s, c), JOB_CANCELLED);
    CHECK(counts_exact(s, "q", T0 + 2));
    store_close(s);
}

TEST(long_cascade_is_finished_by_the_sweep)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    /* A chain longer than one transaction's walk. */
    int64_t first = 0, last = 0;
    CHECK(enqueue_chain(s, &first, &last));
    CHECK(fail_job(s, first, T0 + 1));
    CHECK_INT(status_of(s, last), JOB_BLOCKED); /* not reached yet */
    struct sweep_result r;
    for (int i = 0; i < 10 && status_of(s, last) == JOB_BLOCKED; i++)
        CHECK_INT(store_sweep(s, T0 + 2, 86400, 500, &r), STORE_OK);
    CHECK_INT(status_of(s, last), JOB_CANCELLED);
    CHECK_INT(jobs_int("count(*)", "status = 6"), 0);
    CHECK(counts_exact(s, "q", T0 + 2));
    store_close(s);
}

/* A purged job that had not ended settles its dependents as a cancel of it would: "cancel"
 * ones are cancelled naming it (and theirs after them), "run" ones are released. */
TEST(purge_of_a_queued_parent_settles_its_dependents_as_a_cancel)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "p", 0, T0, T0);
    int64_t b = enqueue_after(s, &a, 1, DEP_CANCEL, T0);
    int64_t c = enqueue_after(s, &b, 1, DEP_CANCEL, T0);
    int64_t run = enqueue_after(s, &a, 1, DEP_RUN, T0);
    CHECK(a > 0 && b > 0 && c > 0 && run > 0);
    size_t deleted = 0;
    CHECK_INT(store_purge(s, "p", JOB_QUEUED, 10, T0 + 1, &deleted), STORE_OK);
    CHECK_INT(deleted, 1);
    CHECK_INT(status_of(s, a), -1); /* gone */
    CHECK_INT(status_of(s, b), JOB_CANCELLED);
    CHECK_INT(status_of(s, c), JOB_CANCELLED);
    struct job j;
    CHECK_INT(store_get(s, b, &j), STORE_OK);
    CHECK_STR(j.error_code, "dependency_failed");
    char want[64];
    snprintf(want, sizeof want, "\"dependency %lld did not succeed\"", (long long)a);
    CHECK_STR(j.error_detail, want);
    job_clear(&j);
    CHECK_INT(store_get(s, run, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_INT(j.run_at, T0 + 1); /* released at the purge */
    job_clear(&j);
    CHECK(run_job(s, run, T0 + 2));
    CHECK(counts_exact(s, "q", T0 + 2));
    CHECK(counts_exact(s, "p", T0 + 2));
    store_close(s);
}

/* Purged blocked jobs: a dependent purged in the same batch goes with them, one in another
 * queue is settled; the dependency they waited for still ends cleanly. */
TEST(purge_of_blocked_jobs_takes_their_batch_along_and_settles_the_rest)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    int64_t b = enqueue_after(s, &a, 1, DEP_CANCEL, T0);
    int64_t c = enqueue_after(s, &b, 1, DEP_CANCEL, T0);
    int64_t other = enqueue_after_in(s, "r", &b, 1, DEP_RUN, T0);
    CHECK(a > 0 && b > 0 && c > 0 && other > 0);
    size_t deleted = 0;
    CHECK_INT(store_purge(s, "q", JOB_BLOCKED, 10, T0 + 1, &deleted), STORE_OK);
    CHECK_INT(deleted, 2);
    CHECK_INT(status_of(s, b), -1); /* gone */
    CHECK_INT(status_of(s, c), -1); /* gone */
    CHECK_INT(status_of(s, other), JOB_QUEUED);
    CHECK(run_job(s, a, T0 + 2));
    CHECK_INT(jobs_int("count(*)", "status = 6"), 0);
    CHECK(counts_exact(s, "q", T0 + 2));
    CHECK(counts_exact(s, "r", T0 + 2));
    store_close(s);
}

/* A purged cancelled job whose dependents a cascade left for the sweep: the purge goes on
 * with them (the sweep would find it gone). */
TEST(purge_of_an_ended_job_finishes_the_walk_it_left)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t first = 0, last = 0;
    CHECK(enqueue_chain(s, &first, &last));
    CHECK(fail_job(s, first, T0 + 1));
    CHECK_INT(status_of(s, last), JOB_BLOCKED); /* left for the sweep */
    size_t deleted = 0, total = 0;
    for (int i = 0; i < 10; i++) {
        CHECK_INT(store_purge(s, "q", JOB_CANCELLED, 1000, T0 + 2, &deleted), STORE_OK);
        total += deleted;
        if (deleted == 0)
            break;
    }
    CHECK_INT(total, DEPEND_STEP_MAX + 50);
    CHECK_INT(jobs_int("count(*)", "status = 6"), 0);
    CHECK(counts_exact(s, "q", T0 + 2));
    store_close(s);
}

/* A dependent cancelled by one dependency (a) that also depended on a purged job stays
 * cancelled when a is retried and succeeds: the purged job never comes back, and it counts
 * as cancelled when it had not ended (x), as its own end when it had (y). Its detail names
 * the purged job from the purge on. */
TEST(retry_after_a_purge_leaves_the_dependent_cancelled)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    int64_t x = enqueue(s, "p", 0, T0, T0), y = enqueue(s, "r", 0, T0, T0);
    int64_t ax[2] = {a, x}, ay[2] = {a, y};
    int64_t d1 = enqueue_after(s, ax, 2, DEP_CANCEL, T0);
    int64_t d2 = enqueue_after(s, ay, 2, DEP_CANCEL, T0);
    CHECK(a > 0 && x > 0 && y > 0 && d1 > 0 && d2 > 0);
    CHECK(fail_job(s, a, T0 + 1));
    CHECK(cancelled_by(s, d1, a) && cancelled_by(s, d2, a));
    CHECK(fail_job_in(s, "r", y, T0 + 2));
    size_t deleted = 0;
    CHECK_INT(store_purge(s, "p", JOB_QUEUED, 10, T0 + 3, &deleted), STORE_OK);
    CHECK_INT(deleted, 1);
    CHECK_INT(store_purge(s, "r", JOB_FAILED, 10, T0 + 3, &deleted), STORE_OK);
    CHECK_INT(deleted, 1);
    CHECK_INT(status_of(s, d1), JOB_CANCELLED);
    CHECK_INT(status_of(s, d2), JOB_CANCELLED);
    struct job j;
    CHECK_INT(store_retry(s, a, T0 + 4, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(status_of(s, d1), JOB_CANCELLED);
    CHECK_INT(status_of(s, d2), JOB_CANCELLED);
    CHECK(run_job(s, a, T0 + 5));
    CHECK(cancelled_by(s, d1, x) && cancelled_by(s, d2, y));
    CHECK_INT(jobs_int("count(*)", "status = 6"), 0);
    CHECK(counts_exact(s, "q", T0 + 5));
    store_close(s);
}

/* A dependent cancelled by one dependency (a) while another (x) had been cancelled already
 * stays cancelled when retention deletes x and a is then retried and succeeds: x never comes
 * back, so retention pins the dependent to it as a purge does. x ended before the dependent
 * was enqueued (at once cancelled by a, the first it reads), so retention takes x alone. */
TEST(retry_after_retention_leaves_the_dependent_cancelled)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0), x = enqueue(s, "p", 0, T0, T0);
    CHECK(a > 0 && x > 0);
    CHECK(fail_job(s, a, T0 + 1));
    struct job j;
    CHECK_INT(store_cancel(s, x, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    int64_t ax[2] = {a, x};
    int64_t d = enqueue_after(s, ax, 2, DEP_CANCEL, T0 + 2);
    CHECK(d > 0);
    CHECK(cancelled_by(s, d, a));
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 2, 0, 500, &r), STORE_OK); /* finished before T0 + 2 */
    CHECK_INT(r.deleted, 1);
    CHECK_INT(status_of(s, x), -1);
    CHECK_INT(store_retry(s, a, T0 + 3, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(status_of(s, d), JOB_CANCELLED);
    CHECK(run_job(s, a, T0 + 4));
    CHECK(cancelled_by(s, d, x));
    CHECK_INT(jobs_int("count(*)", "status = 6"), 0);
    CHECK(counts_exact(s, "q", T0 + 4));
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(blocked_until_every_dependency_succeeds),
          TEST_ENTRY(failure_cancels_down_the_graph_and_settles_run_dependents),
          TEST_ENTRY(ended_dependency_counts_at_once_and_unknown_is_refused),
          TEST_ENTRY(batch_inserts_parents_first),
          TEST_ENTRY(batch_with_keys_sent_again_links_to_the_jobs_it_hit),
          TEST_ENTRY(keyed_enqueue_sent_again_after_its_dependency_is_gone),
          TEST_ENTRY(retry_resumes_a_failed_workflow),
          TEST_ENTRY(cancel_of_a_blocked_job_and_of_its_parent),
          TEST_ENTRY(long_cascade_is_finished_by_the_sweep),
          TEST_ENTRY(purge_of_a_queued_parent_settles_its_dependents_as_a_cancel),
          TEST_ENTRY(purge_of_blocked_jobs_takes_their_batch_along_and_settles_the_rest),
          TEST_ENTRY(purge_of_an_ended_job_finishes_the_walk_it_left),
          TEST_ENTRY(retry_after_a_purge_leaves_the_dependent_cancelled),
          TEST_ENTRY(retry_after_retention_leaves_the_dependent_cancelled))
