/* Storage faults in every write path of the SQLite store. For each path the fault injector
 * (sqlite_conn_fault_run) makes the Nth SQLite step fail with BUSY, IOERR, FULL or READONLY,
 * once or from then on, for N = 1, 2, ... until the operation runs through without reaching
 * the fault. Every time the result must be STORE_BUSY or STORE_UNAVAILABLE (or, for a busy
 * step that goes away, STORE_OK after a retry from scratch), the jobs table unchanged, no
 * hook called, no transaction left open, the same call without the fault must then succeed,
 * and PRAGMA integrity_check must answer ok. Healing and store_ping: test_store_heal.c. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_conn.h"
#include "test_faults_util.h"

#define MAX_STEPS 64 /* no write path takes this many steps: the loop is bounded */

/* Report a failed expectation from a helper that returns int. */
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* ----- the write paths ------------------------------------------------------------------ */

/* What a setup leaves for its operation. */
struct fixture {
    int64_t id;
    char token[JOB_TOKEN_LEN + 1];
};

struct write_path {
    const char *name;
    int (*setup)(struct store *s, struct fixture *fx); /* 0, or -1 */
    enum store_result (*op)(struct store *s, const struct fixture *fx);
    /* Steps of the transactions that run after the one doing the work and commit on their
     * own (a sweep's later parts, each BEGIN, one statement, COMMIT); 0 for one transaction. */
    int trailing;
};

/* Enqueue one due job with max_attempts; sets fx->id. */
static int setup_job(struct store *s, struct fixture *fx, int64_t max_attempts)
{
    struct job_spec sp = spec_of("q", 0, T0);
    sp.max_attempts = max_attempts;
    fx->id = enqueue_spec(s, &sp, T0);
    return fx->id > 0 ? 0 : -1;
}

/* Enqueue one job and claim it with a lease of lease seconds; sets fx->id and fx->token. */
static int setup_running(struct store *s, struct fixture *fx, int64_t max_attempts, int64_t lease)
{
    if (setup_job(s, fx, max_attempts) != 0)
        return -1;
    struct job j;
    size_t n = 0;
    if (claim_caps(s, "q", NULL, 1, lease, T0, &j, &n) != STORE_OK || n != 1)
        return -1;
    int ok = j.id == fx->id && j.lease_token && strlen(j.lease_token) == JOB_TOKEN_LEN;
    if (ok)
        memcpy(fx->token, j.lease_token, JOB_TOKEN_LEN + 1);
    job_clear(&j);
    return ok ? 0 : -1;
}

static int setup_one(struct store *s, struct fixture *fx)
{
    return setup_job(s, fx, 5);
}

static int setup_claimed(struct store *s, struct fixture *fx)
{
    return setup_running(s, fx, 5, 30);
}

static int setup_for_claim(struct store *s, struct fixture *fx)
{
    /* Two due jobs and one that the claim promotes first (due at T0 + 5, claimed at T0 + 10). */
    if (setup_job(s, fx, 5) != 0 || enqueue(s, "q", 7, T0, T0) <= 0)
        return -1;
    return enqueue(s, "q", 3, T0 + 5, T0) > 0 ? 0 : -1;
}

static int setup_failed(struct store *s, struct fixture *fx)
{
    if (setup_running(s, fx, 5, 30) != 0)
        return -1;
    struct fail_req f = {"boom", NULL, 0, -1};
    struct job j;
    if (store_fail(s, fx->id, fx->token, &f, T0 + 1, &j) != STORE_OK)
        return -1;
    job_clear(&j);
    return 0;
}

static int setup_expiring(struct store *s, struct fixture *fx)
{
    return setup_running(s, fx, 5, 10);
}

static int setup_expiring_last(struct store *s, struct fixture *fx)
{
    return setup_running(s, fx, 1, 10); /* its only attempt */
}

static int setup_finished(struct store *s, struct fixture *fx)
{
    if (setup_running(s, fx, 5, 30) != 0)
        return -1;
    struct job j;
    if (store_complete(s, fx->id, fx->token, "1", T0 + 1, &j) != STORE_OK)
        return -1;
    job_clear(&j);
    return 0;
}

/* A lane that no job references: its one job (concurrency key "k") was purged. */
static int setup_empty_lane(struct store *s, struct fixture *fx)
{
    fx->id = enqueue_keyed(s, "q", "k");
    size_t deleted = 0;
    return fx->id > 0 && store_purge(s, "q", JOB_QUEUED, 10, T0, &deleted) == STORE_OK &&
                   deleted == 1
               ? 0
               : -1;
}

/* A claim row of a rate-limited key "k" at T0 (its job succeeded at T0 + 1). */
static int setup_key_claimed(struct store *s, struct fixture *fx)
{
    struct limit out, l = {.rate_jobs = 1, .rate_per_seconds = 10};
    snprintf(l.key, sizeof l.key, "k");
    struct job c, j;
    fx->id = enqueue_keyed(s, "q", "k");
    if (fx->id < 0 || store_limit_put(s, &l, T0, &out) != STORE_OK ||
        claim_one(s, "q", T0, &c) != fx->id)
        return -1;
    enum store_result r = store_complete(s, fx->id, c.lease_token, NULL, T0 + 1, &j);
    job_clear(&c);
    if (r == STORE_OK)
        job_clear(&j);
    return r == STORE_OK ? 0 : -1;
}

static int setup_scheduled(struct store *s, struct fixture *fx)
{
    fx->id = enqueue(s, "q", 0, T0 + 50, T0);
    return fx->id > 0 ? 0 : -1;
}

/* A queued job and a scheduled one, both expiring at T0 + 50 (the sweep runs at T0 + 100). */
static int setup_expiring_jobs(struct store *s, struct fixture *fx)
{
    struct job_spec sp = spec_of("q", 0, T0);
    sp.expires_at = T0 + 50;
    fx->id = enqueue_spec(s, &sp, T0);
    sp.run_at = T0 + 200;
    return fx->id > 0 && enqueue_spec(s, &sp, T0) > 0 ? 0 : -1;
}

/* The job out of a single-job operation is released at once. */
static enum store_result drop_job(enum store_result r, struct job *j)
{
    if (r == STORE_OK || r == STORE_EXISTS)
        job_clear(j);
    return r;
}

static enum store_result op_enqueue_single(struct store *s, const struct fixture *fx)
{
    (void)fx;
    struct job_spec sp = spec_of("q", 5, T0 + 2);
    sp.idempotency_key = "key-1";
    struct job j;
    int created = 0;
    return drop_job(store_enqueue(s, &sp, 1, T0 + 2, &j, &created), &j);
}

static enum store_result op_enqueue_batch(struct store *s, const struct fixture *fx)
{
    (void)fx;
    struct job_spec sp[3] = {spec_of("a", 0, T0 + 2), spec_of("b", 1, T0 + 100),
                             spec_of("c", 2, T0 + 2)};
    sp[2].idempotency_key = "key-2";
    struct job out[3];
    int created[3];
    enum store_result r = store_enqueue(s, sp, 3, T0 + 2, out, created);
    if (r == STORE_OK) {
        for (int i = 0; i < 3; i++)
            job_clear(&out[i]);
    }
    return r;
}

static enum store_result op_claim(struct store *s, const struct fixture *fx)
{
    (void)fx;
    struct job out[4];
    size_t n = 0;
    enum store_result r = claim_caps(s, "q", NULL, 4, 30, T0 + 10, out, &n);
    if (r == STORE_OK && n != 3)
        r = STORE_ERROR;
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    return r;
}

static enum store_result op_heartbeat(struct store *s, const struct fixture *fx)
{
    struct job j;
    return drop_job(store_heartbeat(s, fx->id, fx->token, 60, "{\"step\":2}", T0 + 5, &j), &j);
}

static enum store_result op_complete(struct store *s, const struct fixture *fx)
{
    struct job j;
    return drop_job(store_complete(s, fx->id, fx->token, "{\"ok\":true}", T0 + 5, &j), &j);
}

static enum store_result op_fail_requeue(struct store *s, const struct fixture *fx)
{
    struct fail_req f = {"oops", "{\"line\":3}", 1, -1};
    struct job j;
    return drop_job(store_fail(s, fx->id, fx->token, &f, T0 + 5, &j), &j);
}

static enum store_result op_snooze(struct store *s, const struct fixture *fx)
{
    struct job j;
    return drop_job(store_snooze(s, fx->id, fx->token, 60, 1, T0 + 5, &j), &j);
}

static enum store_result op_fail_final(struct store *s, const struct fixture *fx)
{
    struct fail_req f = {"fatal", NULL, 0, -1};
    struct job j;
    return drop_job(store_fail(s, fx->id, fx->token, &f, T0 + 5, &j), &j);
}

static enum store_result op_cancel(struct store *s, const struct fixture *fx)
{
    struct job j;
    return drop_job(store_cancel(s, fx->id, T0 + 5, &j), &j);
}

static enum store_result op_retry(struct store *s, const struct fixture *fx)
{
    struct job j;
    return drop_job(store_retry(s, fx->id, T0 + 5, &j), &j);
}

/* One sweep at T0 + 100 keeping finished jobs for `retention` seconds. */
static enum store_result sweep_at(struct store *s, int64_t retention)
{
    struct sweep_result res;
    return store_sweep(s, T0 + 100, retention, 500, &res);
}

static enum store_result op_sweep_keep(struct store *s, const struct fixture *fx)
{
    (void)fx;
    return sweep_at(s, 86400);
}

/* A day past the claim row of setup_key_claimed, keeping its job. */
static enum store_result op_sweep_claims(struct store *s, const struct fixture *fx)
{
    (void)fx;
    struct sweep_result res;
    return store_sweep(s, T0 + 86401, 10 * 86400, 500, &res);
}

static enum store_result op_sweep_delete(struct store *s, const struct fixture *fx)
{
    (void)fx;
    return sweep_at(s, 10);
}

/* ----- the fault loop ------------------------------------------------------------------- */

struct fault_mode {
    const char *name;
    int rc;
    int count;              /* faults in a row (-1: every step from the Nth on) */
    enum store_result want; /* the result when the fault fired */
};

static const struct fault_mode modes[] = {
    {"busy, persistent", SQLITE_BUSY, -1, STORE_BUSY},
    {"busy, once (retried)", SQLITE_BUSY, 1, STORE_OK},
    {"ioerr, persistent", SQLITE_IOERR_WRITE, -1, STORE_UNAVAILABLE},
    {"ioerr, once", SQLITE_IOERR_FSYNC, 1, STORE_UNAVAILABLE},
    {"full, persistent", SQLITE_FULL, -1, STORE_UNAVAILABLE},
    {"full, once", SQLITE_FULL, 1, STORE_UNAVAILABLE},
    {"readonly, persistent", SQLITE_READONLY, -1, STORE_UNAVAILABLE},
};

/* What a clean run of a path does: the database before and after, the hooks it calls and
 * the SQLite steps it takes. */
struct reference {
    char *before;
    char *after;
    struct recorder hooks;
    int steps;
};

static void reference_free(struct reference *ref)
{
    free(ref->before);
    free(ref->after);
}

/* Open a fresh store and run p's setup; *before is the dump after it. */
static struct store *prepared(const struct write_path *p, struct fixture *fx, char **before)
{
    struct store *s = fresh_store();
    memset(fx, 0, sizeof *fx);
    if (s && p->setup(s, fx) != 0) {
        fprintf(stderr, "%s: setup failed\n", p->name);
        store_close(s);
        return NULL;
    }
    memset(&rec, 0, sizeof rec);
    *before = s ? dump() : NULL;
    if (s && !*before) {
        store_close(s);
        return NULL;
    }
    return s;
}

static int reference_run(const struct write_path *p, struct reference *ref)
{
    struct fixture fx;
    memset(ref, 0, sizeof *ref);
    struct store *s = prepared(p, &fx, &ref->before);
    EXPECT(s != NULL, "%s: open and setup", p->name);
    sqlite_conn_fault_run(1 << 30, SQLITE_FULL, 1); /* never fires: counts the steps */
    enum store_result r = p->op(s, &fx);
    ref->steps = sqlite_conn_fault_steps();
    sqlite_conn_fault(0, 0);
    ref->hooks = rec;
    ref->after = dump();
    store_close(s);
    EXPECT(r == STORE_OK, "%s: clean run gave %s", p->name, store_result_name(r));
    EXPECT(ref->after && strcmp(ref->before, ref->after) != 0, "%s: clean run changed nothing",
           p->name);
    EXPECT(integrity_ok(), "%s: integrity after the clean run", p->name);
    EXPECT(ref->steps > p->trailing, "%s: %d steps", p->name, ref->steps);
    return 0;
}

/* The database and hooks after a run that failed at step n: unchanged and silent; or, when
 * the fault hit a later transaction of the operation (a sweep's trailing parts), with the
 * work committed whole and its hooks called, exactly as in a clean run. */
static int check_after_fault(const struct write_path *p, const struct reference *ref,
                             const char *now, int n, const char *what)
{
    if (strcmp(now, ref->before) == 0) {
        EXPECT(rec.ready == 0 && rec.scheduled == 0, "%s: hooks called (%d ready, %d scheduled)",
               what, rec.ready, rec.scheduled);
        return 0;
    }
    EXPECT(n > ref->steps - p->trailing, "%s: the database changed:\n--- before\n%s--- after\n%s",
           what, ref->before, now);
    EXPECT(strcmp(now, ref->after) == 0, "%s: a partial sweep left\n%s", what, now);
    EXPECT(rec.ready == ref->hooks.ready && rec.scheduled == ref->hooks.scheduled,
           "%s: hooks %d/%d after a committed part (clean run %d/%d)", what, rec.ready,
           rec.scheduled, ref->hooks.ready, ref->hooks.scheduled);
    return 0;
}

/* Run p with the fault of mode m at step n on a fresh database. Sets *reached to whether the
 * fault fired. Returns 0 when everything held, -1 otherwise (reported). */
static int fault_once(const struct write_path *p, const struct reference *ref,
                      const struct fault_mode *m, int n, int *reached)
{
    char what[160];
    snprintf(what, sizeof what, "%s, %s at step %d", p->name, m->name, n);
    struct fixture fx;
    char *before = NULL;
    struct store *s = prepared(p, &fx, &before);
    EXPECT(s != NULL, "%s: open and setup", what);
    int same_start = strcmp(before, ref->before) == 0;
    free(before);
    if (!same_start) {
        store_close(s);
        EXPECT(0, "%s: the setup is not deterministic", what);
    }

    sqlite_conn_fault_run(n, m->rc, m->count);
    enum store_result r = p->op(s, &fx);
    *reached = sqlite_conn_fault_fired() > 0;
    sqlite_conn_fault(0, 0);
    int rc = 0;
    char *now = dump();
    if (!now) {
        rc = -1;
    } else if (!*reached) {
        /* The operation needs fewer steps: a clean run. */
        if (r != STORE_OK || strcmp(now, ref->after) != 0 || rec.ready != ref->hooks.ready ||
            rec.scheduled != ref->hooks.scheduled) {
            fprintf(stderr, "%s: run without the fault gave %s\n", what, store_result_name(r));
            rc = -1;
        }
    } else if (m->want == STORE_OK) {
        /* A fault that went away: retried from scratch, done once, hooks as a clean run. */
        if (r != STORE_OK || strcmp(now, ref->after) != 0 || rec.ready != ref->hooks.ready ||
            rec.scheduled != ref->hooks.scheduled) {
            fprintf(stderr, "%s: retry gave %s, hooks %d/%d (clean %d/%d), state\n%s\n", what,
                    store_result_name(r), rec.ready, rec.scheduled, ref->hooks.ready,
                    ref->hooks.scheduled, now);
            rc = -1;
        }
    } else if (r != m->want) {
        fprintf(stderr, "%s: result %s, want %s\n", what, store_result_name(r),
                store_result_name(m->want));
        rc = -1;
    } else if (check_after_fault(p, ref, now, n, what) != 0) {
        rc = -1;
    } else if (!write_lock_free()) {
        fprintf(stderr, "%s: the store kept a write transaction open\n", what);
        rc = -1;
    } else {
        /* The same call without the fault goes through, no restart needed. */
        memset(&rec, 0, sizeof rec);
        r = p->op(s, &fx);
        free(now);
        now = dump();
        if (r != STORE_OK || !now || strcmp(now, ref->after) != 0) {
            fprintf(stderr, "%s: the call after the fault gave %s\n", what, store_result_name(r));
            rc = -1;
        }
    }
    free(now);
    store_close(s);
    if (rc == 0 && !integrity_ok()) {
        fprintf(stderr, "%s: integrity_check failed\n", what);
        rc = -1;
    }
    return rc;
}

/* Every fault mode at every step of p. Returns 0 when all held. */
static int fault_every_step(const struct write_path *p)
{
    struct reference ref;
    if (reference_run(p, &ref) != 0) {
        reference_free(&ref);
        return -1;
    }
    int rc = 0;
    for (size_t m = 0; rc == 0 && m < sizeof modes / sizeof modes[0]; m++) {
        int reached = 1, n;
        for (n = 1; rc == 0 && reached && n <= MAX_STEPS; n++)
            rc = fault_once(p, &ref, &modes[m], n, &reached);
        if (rc == 0 && reached) {
            fprintf(stderr, "%s, %s: still failing after %d steps\n", p->name, modes[m].name,
                    MAX_STEPS);
            rc = -1;
        }
        if (rc == 0 && n < 3) {
            fprintf(stderr, "%s: the fault never fired\n", p->name);
            rc = -1;
        }
    }
    reference_free(&ref);
    return rc;
}

static const struct write_path paths[] = {
    {"enqueue single", setup_one, op_enqueue_single, 0},
    {"enqueue batch", setup_one, op_enqueue_batch, 0},
    {"claim (with promotion)", setup_for_claim, op_claim, 0},
    {"heartbeat", setup_claimed, op_heartbeat, 0},
    {"complete", setup_claimed, op_complete, 0},
    {"fail, requeue", setup_claimed, op_fail_requeue, 0},
    {"fail, final", setup_claimed, op_fail_final, 0},
    {"cancel", setup_claimed, op_cancel, 0},
    {"retry", setup_failed, op_retry, 0},
    /* A sweep is promotion, then leases, then expiry, then dependents, then retention, then
     * events, then lanes and key claims, each its own transaction (with nothing to do: BEGIN,
     * one statement, COMMIT; events two statements, their bounds and the prune, as the jobs
     * have events; the last one two statements). */
    {"sweep, requeue", setup_expiring, op_sweep_keep, 17},
    {"sweep, fail", setup_expiring_last, op_sweep_keep, 17},
    {"sweep, delete", setup_finished, op_sweep_delete, 8},
    {"sweep, promotion", setup_scheduled, op_sweep_keep, 20},
    {"sweep, expired jobs", setup_expiring_jobs, op_sweep_keep, 14},
    {"snooze", setup_claimed, op_snooze, 0},
    {"sweep, lanes", setup_empty_lane, op_sweep_keep, 0},
    {"sweep, key claims", setup_key_claimed, op_sweep_claims, 0},
};

TEST(faults_enqueue_single)
{
    CHECK(fault_every_step(&paths[0]) == 0);
}

TEST(faults_enqueue_batch)
{
    CHECK(fault_every_step(&paths[1]) == 0);
}

TEST(faults_claim)
{
    CHECK(fault_every_step(&paths[2]) == 0);
}

TEST(faults_heartbeat)
{
    CHECK(fault_every_step(&paths[3]) == 0);
}

TEST(faults_complete)
{
    CHECK(fault_every_step(&paths[4]) == 0);
}

TEST(faults_fail_requeue)
{
    CHECK(fault_every_step(&paths[5]) == 0);
}

TEST(faults_fail_final)
{
    CHECK(fault_every_step(&paths[6]) == 0);
}

TEST(faults_cancel)
{
    CHECK(fault_every_step(&paths[7]) == 0);
}

TEST(faults_retry)
{
    CHECK(fault_every_step(&paths[8]) == 0);
}

TEST(faults_sweep_requeue)
{
    CHECK(fault_every_step(&paths[9]) == 0);
}

TEST(faults_sweep_fail)
{
    CHECK(fault_every_step(&paths[10]) == 0);
}

TEST(faults_sweep_delete)
{
    CHECK(fault_every_step(&paths[11]) == 0);
}

TEST(faults_sweep_promotion)
{
    CHECK(fault_every_step(&paths[12]) == 0);
}

TEST(faults_sweep_expired_jobs)
{
    CHECK(fault_every_step(&paths[13]) == 0);
}

TEST(faults_snooze)
{
    CHECK(fault_every_step(&paths[14]) == 0);
}

TEST(faults_sweep_lanes)
{
    CHECK(fault_every_step(&paths[15]) == 0);
}

TEST(faults_sweep_key_claims)
{
    CHECK(fault_every_step(&paths[16]) == 0);
}

TEST(fault_injector_counts_and_stops)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    /* Two faults in a row from the second step: BEGIN passes, the insert and the rollback
     * fail, and nothing fires after that. */
    sqlite_conn_fault_run(2, SQLITE_IOERR_WRITE, 2);
    CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    CHECK_INT(sqlite_conn_fault_fired(), 2);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    CHECK_INT(sqlite_conn_fault_fired(), 2);
    sqlite_conn_fault_run(0, SQLITE_FULL, -1);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    CHECK_INT(sqlite_conn_fault_fired(), 0);
    store_close(s);
    CHECK(integrity_ok());
}

TEST_MAIN(TEST_ENTRY(faults_enqueue_single), TEST_ENTRY(faults_enqueue_batch),
          TEST_ENTRY(faults_claim), TEST_ENTRY(faults_heartbeat), TEST_ENTRY(faults_complete),
          TEST_ENTRY(faults_fail_requeue), TEST_ENTRY(faults_fail_final), TEST_ENTRY(faults_cancel),
          TEST_ENTRY(faults_retry), TEST_ENTRY(faults_sweep_requeue), TEST_ENTRY(faults_sweep_fail),
          TEST_ENTRY(faults_sweep_delete), TEST_ENTRY(faults_sweep_promotion),
          TEST_ENTRY(faults_sweep_expired_jobs), TEST_ENTRY(faults_snooze),
          TEST_ENTRY(faults_sweep_lanes), TEST_ENTRY(faults_sweep_key_claims),
          TEST_ENTRY(fault_injector_counts_and_stops))
