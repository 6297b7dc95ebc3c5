/* The store under many threads, on SQLite and on PostgreSQL (test_store_util.h): claimers
 * never share a job, and claims, lease calls, reads and sweeps running at once leave every
 * job done exactly once. */
#include <pthread.h>
#include <stdatomic.h>

#include "test_store_util.h"

/* Enqueue n jobs alternating between queues "t1" and "t2"; returns the first id or -1. */
static int64_t fill(struct store *s, int n)
{
    struct job_spec *sp = calloc((size_t)n, sizeof *sp);
    struct job *out = calloc((size_t)n, sizeof *out);
    int *created = calloc((size_t)n, sizeof *created);
    int64_t first = -1;
    int ok = 1;
    for (int done = 0; ok && done < n; done += JOB_BATCH_MAX) {
        int k = n - done < JOB_BATCH_MAX ? n - done : JOB_BATCH_MAX;
        for (int i = 0; i < k; i++)
            sp[i] = spec_of((done + i) % 2 ? "t1" : "t2", (done + i) % 3, T0);
        ok = store_enqueue(s, sp, (size_t)k, T0, out, created) == STORE_OK;
        if (ok && first < 0)
            first = out[0].id;
        for (int i = 0; ok && i < k; i++)
            job_clear(&out[i]);
    }
    free(sp);
    free(out);
    free(created);
    return ok ? first : -1;
}

struct claimer {
    struct store *s;
    int64_t *ids;
    size_t n;
    int errors;
};

static void *claim_loop(void *arg)
{
    struct claimer *c = arg;
    const char *queues[2] = {"t1", "t2"};
    struct job out[5];
    for (int rounds = 0; rounds < 10000; rounds++) {
        struct claim_req req = {"w", queues, 2, NULL, 30, 1 + rounds % 5};
        size_t n = 0;
        if (store_claim(c->s, &req, T0, out, &n) != STORE_OK) {
            c->errors++;
            continue;
        }
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            c->ids[c->n++] = out[i].id;
            job_clear(&out[i]);
        }
    }
    return NULL;
}

TEST(threads_claim_each_job_once)
{
    enum { THREADS = 8, JOBS = 2000 };
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t first = fill(s, JOBS);
    CHECK(first > 0);
    struct claimer c[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        c[t] = (struct claimer){s, calloc(JOBS, sizeof(int64_t)), 0, 0};
        CHECK(pthread_create(&th[t], NULL, claim_loop, &c[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    unsigned char *seen = calloc(JOBS, 1);
    size_t total = 0;
    int errors = 0, dup = 0, bad = 0;
    for (int t = 0; t < THREADS; t++) {
        errors += c[t].errors;
        for (size_t i = 0; i < c[t].n; i++) {
            int64_t k = c[t].ids[i] - first;
            if (k < 0 || k >= JOBS)
                bad++;
            else if (seen[k]++)
                dup++;
        }
        total += c[t].n;
        free(c[t].ids);
    }
    free(seen);
    store_close(s);
    CHECK_INT(errors, 0);
    CHECK_INT(bad, 0);
    CHECK_INT(dup, 0);
    CHECK_INT(total, JOBS);
}

#define MIXED_JOBS 600

/* Shared state of the mixed workload. */
struct mixed {
    struct store *s;
    int64_t first;
    atomic_int completed[MIXED_JOBS]; /* successful completes per job */
    atomic_int done;                  /* jobs succeeded so far */
    atomic_int errors;                /* unexpected results */
    atomic_int stop;
};

static void bad_result(struct mixed *m, const char *what, enum store_result r)
{
    fprintf(stderr, "%s: %s\n", what, store_result_name(r));
    atomic_fetch_add(&m->errors, 1);
}

/* Claim, heartbeat, then fail once (every 5th job, retried at once) or complete. */
static void *worker(void *arg)
{
    struct mixed *m = arg;
    const char *queues[2] = {"t1", "t2"};
    struct job out[3], j;
    for (int round = 0; round < 100000 && !atomic_load(&m->stop); round++) {
        struct claim_req req = {"w", queues, 2, NULL, 3600, 3};
        size_t n = 0;
        enum store_result r = store_claim(m->s, &req, T0, out, &n);
        if (r != STORE_OK)
            bad_result(m, "claim", r);
        for (size_t i = 0; i < n; i++) {
            int64_t k = out[i].id - m->first;
            r = store_heartbeat(m->s, out[i].id, out[i].lease_token, 0, "{\"p\":1}", T0, &j);
            if (r == STORE_OK)
                job_clear(&j);
            else
                bad_result(m, "heartbeat", r);
            if (k % 5 == 0 && out[i].attempts == 1) {
                struct fail_req f = {"again", NULL, 1, 0};
                r = store_fail(m->s, out[i].id, out[i].lease_token, &f, T0, &j);
            } else {
                r = store_complete(m->s, out[i].id, out[i].lease_token, NULL, T0, &j);
                if (r == STORE_OK && k >= 0 && k < MIXED_JOBS) {
                    atomic_fetch_add(&m->completed[k], 1);
                    atomic_fetch_add(&m->done, 1);
                }
            }
            if (r == STORE_OK)
                job_clear(&j);
            else
                bad_result(m, "complete/fail", r);
            job_clear(&out[i]);
        }
        if (atomic_load(&m->done) >= MIXED_JOBS)
            break;
    }
    return NULL;
}

static void *reader(void *arg)
{
    struct mixed *m = arg;
    struct job *out = calloc(100, sizeof *out);
    for (int round = 0; round < 100000 && !atomic_load(&m->stop); round++) {
        struct list_filter f = {round % 2 ? "t1" : NULL, round % 3 ? JOB_QUEUED : -1, 0, 100};
        size_t n = 0;
        int more = 0;
        enum store_result r = store_list(m->s, &f, out, &n, &more);
        if (r != STORE_OK)
            bad_result(m, "list", r);
        for (size_t i = 0; r == STORE_OK && i < n; i++)
            job_clear(&out[i]);
        struct queue_stats *q = NULL;
        size_t nq = 0;
        if ((r = store_queues(m->s, T0, &q, &nq)) != STORE_OK)
            bad_result(m, "queues", r);
        else
            queue_stats_free(q, nq);
        struct job j;
        if ((r = store_get(m->s, m->first + round % MIXED_JOBS, &j)) != STORE_OK)
            bad_result(m, "get", r);
        else
            job_clear(&j);
        if ((r = store_ping(m->s)) != STORE_OK)
            bad_result(m, "ping", r);
    }
    free(out);
    return NULL;
}

static void *sweeper(void *arg)
{
    struct mixed *m = arg;
    for (int round = 0; round < 100000 && !atomic_load(&m->stop); round++) {
        struct sweep_result res;
        enum store_result r = store_sweep(m->s, T0, 86400, 500, &res);
        if (r != STORE_OK)
            bad_result(m, "sweep", r);
        int64_t next = 0;
        if ((r = store_next_due(m->s, &next)) != STORE_OK)
            bad_result(m, "next_due", r);
    }
    return NULL;
}

TEST(mixed_threads_finish_every_job_once)
{
    enum { WORKERS = 4, READERS = 2 };
    static struct mixed m; /* large: not on the stack */
    memset(&m, 0, sizeof m);
    m.s = open_store();
    CHECK(m.s != NULL);
    m.first = fill(m.s, MIXED_JOBS);
    CHECK(m.first > 0);
    pthread_t w[WORKERS], r[READERS], sw;
    for (int i = 0; i < WORKERS; i++)
        CHECK(pthread_create(&w[i], NULL, worker, &m) == 0);
    for (int i = 0; i < READERS; i++)
        CHECK(pthread_create(&r[i], NULL, reader, &m) == 0);
    CHECK(pthread_create(&sw, NULL, sweeper, &m) == 0);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(w[i], NULL);
    atomic_store(&m.stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    pthread_join(sw, NULL);

    struct queue_stats *q = NULL;
    size_t nq = 0;
    CHECK_INT(store_queues(m.s, T0, &q, &nq), STORE_OK);
    int64_t succeeded = 0, other = 0;
    for (size_t i = 0; i < nq; i++) {
        succeeded += q[i].count[JOB_SUCCEEDED];
        other += q[i].count[JOB_QUEUED] + q[i].count[JOB_RUNNING] + q[i].count[JOB_FAILED];
    }
    queue_stats_free(q, nq);
    store_close(m.s);
    CHECK_INT(atomic_load(&m.errors), 0);
    CHECK_INT(succeeded, MIXED_JOBS);
    CHECK_INT(other, 0);
    for (int k = 0; k < MIXED_JOBS; k++)
        CHECK_INT(atomic_load(&m.completed[k]), 1);
}

TEST_MAIN(TEST_ENTRY(threads_claim_each_job_once), TEST_ENTRY(mixed_threads_finish_every_job_once))
