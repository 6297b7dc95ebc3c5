/* Group commit in the SQLite store: writes that wait for the writer together are committed
 * in one transaction. Many threads at once share commits; one write failing (before or
 * after it changed rows) rolls back only itself (the others commit and their hooks run); a failed
 * COMMIT fails every write of the group and leaves the database as it was; and a storage
 * fault at any step of a group leaves each write's effect in the database exactly when its
 * result was STORE_OK. The writer is held (sqlite_writer_hold) while a test queues its group,
 * so the groups are deterministic. (The wake-up counts and the stats of lone writes are the
 * store contract, on both backends: tests/unit/store/test_store_group.c; PostgreSQL's groups:
 * tests/unit/pg/test_store_pg_group.c.) */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sqlite_conn.h"
#include "sqlite_store.h"
#include "test_faults_util.h"

#define MAX_STEPS 96 /* no group here takes this many steps: the fault loop is bounded */

/* ----- asynchronous calls and the held writer --------------------------------------------- */

static pthread_mutex_t calls_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t calls_cv = PTHREAD_COND_INITIALIZER;
static int calls_done;

static void call_done(struct store_call *call)
{
    (void)call;
    pthread_mutex_lock(&calls_mu);
    calls_done++;
    pthread_cond_broadcast(&calls_cv);
    pthread_mutex_unlock(&calls_mu);
}

/* Wait until n calls reported since the count was reset. */
static void wait_calls(int n)
{
    pthread_mutex_lock(&calls_mu);
    while (calls_done < n)
        pthread_cond_wait(&calls_cv, &calls_mu);
    calls_done = 0;
    pthread_mutex_unlock(&calls_mu);
}

static struct sqlite_writer *writer_of(struct store *s)
{
    return &sqlite_store_of(s)->writer;
}

/* Wait (bounded, about 20 s) until n transactions are queued on the held writer. */
static int wait_queued(struct store *s, size_t n)
{
    const struct timespec ms = {0, 1000000L};
    for (int i = 0; i < 20000; i++) {
        if (sqlite_writer_queued(writer_of(s)) >= n)
            return 0;
        nanosleep(&ms, NULL);
    }
    return -1;
}

/* ----- many threads at once ---------------------------------------------------------------- */

struct producer {
    struct store *s;
    int index;
    enum store_result r;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct job_spec sp = spec_of("q", p->index, T0);
    struct job j;
    int created = 0;
    p->r = store_enqueue(p->s, &sp, 1, T0, &j, &created);
    if (p->r == STORE_OK)
        job_clear(&j);
    return NULL;
}

TEST(threads_at_once_share_one_commit)
{
    enum { N = 16 };
    struct store *s = fresh_store();
    CHECK(s != NULL);
    struct store_stats before, after;
    store_read_stats(s, &before);
    sqlite_writer_hold(writer_of(s), 1);
    pthread_t t[N];
    struct producer p[N];
    for (int i = 0; i < N; i++) {
        p[i] = (struct producer){s, i, STORE_ERROR};
        CHECK(pthread_create(&t[i], NULL, produce, &p[i]) == 0);
    }
    int queued = wait_queued(s, N);
    sqlite_writer_hold(writer_of(s), 0);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    CHECK_INT(queued, 0);
    for (int i = 0; i < N; i++)
        CHECK_INT(p[i].r, STORE_OK);
    store_read_stats(s, &after);
    CHECK_INT(after.commits - before.commits, 1);
    CHECK_INT(after.ops - before.ops, N);
    CHECK_INT(rec.ready, 1); /* one queue: one wake-up for the whole group */
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), N);
    CHECK(integrity_ok());
}

TEST(hooks_run_once_per_group)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    /* Two due jobs in one queue, two scheduled ones: one wake-up, one timer poke. */
    struct job_spec sp[4] = {spec_of("a", 0, T0), spec_of("a", 1, T0), spec_of("b", 0, T0 + 50),
                             spec_of("b", 0, T0 + 20)};
    struct store_call call[4];
    struct job out[4];
    int created[4];
    sqlite_writer_hold(writer_of(s), 1);
    for (int i = 0; i < 4; i++) {
        call[i] = (struct store_call){
            .kind = STORE_CALL_ENQUEUE,
            .now = T0,
            .enqueue = {.specs = &sp[i], .n = 1, .out = &out[i], .created = &created[i]},
            .done = call_done};
        store_submit(s, &call[i]);
    }
    sqlite_writer_hold(writer_of(s), 0);
    wait_calls(4);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(call[i].result, STORE_OK);
        job_clear(&out[i]);
    }
    CHECK_INT(rec.ready, 1);
    CHECK_INT(rec.scheduled, 1);
    store_close(s);
}

/* ----- a group of four independent writes -------------------------------------------------- */

/* A: enqueue one job in "a". B: enqueue two in "b". C: complete the running job of "c".
 * D: claim from "d", whose only job is scheduled and due (the claim promotes it first). */
struct group {
    struct store_call call[4];
    struct job_spec a, b[2];
    struct job out_a, out_b[2], out_c, out_d[1];
    int created_a, created_b[2];
    const char *queues_d[1];
    struct claim_req claim_d;
    int64_t id_c;
    char token_c[JOB_TOKEN_LEN + 1];
};

/* The jobs of C and D. Returns 0, or -1. */
static int group_setup(struct store *s, struct group *g)
{
    memset(g, 0, sizeof *g);
    struct job j;
    size_t n = 0;
    if (enqueue(s, "c", 0, T0, T0) <= 0 || claim_caps(s, "c", NULL, 1, 30, T0, &j, &n) != 0 ||
        n != 1)
        return -1;
    g->id_c = j.id;
    memcpy(g->token_c, j.lease_token, JOB_TOKEN_LEN + 1);
    job_clear(&j);
    return enqueue(s, "d", 0, T0 + 5, T0) > 0 ? 0 : -1;
}

/* Fill the four calls. */
static void group_fill(struct group *g)
{
    int64_t now = T0 + 10;
    g->a = spec_of("a", 0, now);
    g->b[0] = spec_of("b", 0, now);
    g->b[1] = spec_of("b", 1, now);
    g->queues_d[0] = "d";
    g->claim_d = (struct claim_req){"w", g->queues_d, 1, NULL, 30, 1};
    g->call[0] = (struct store_call){
        .kind = STORE_CALL_ENQUEUE,
        .now = now,
        .enqueue = {.specs = &g->a, .n = 1, .out = &g->out_a, .created = &g->created_a}};
    g->call[1] = (struct store_call){
        .kind = STORE_CALL_ENQUEUE,
        .now = now,
        .enqueue = {.specs = g->b, .n = 2, .out = g->out_b, .created = g->created_b}};
    g->call[2] = (struct store_call){
        .kind = STORE_CALL_COMPLETE,
        .now = now,
        .complete = {.id = g->id_c, .token = g->token_c, .result = "1", .out = &g->out_c}};
    g->call[3] = (struct store_call){
        .kind = STORE_CALL_CLAIM, .now = now, .claim = {.req = &g->claim_d, .out = g->out_d}};
}

/* Queue the four calls on the held writer, release it and wait for them. */
static void group_go(struct store *s, struct group *g)
{
    sqlite_writer_hold(writer_of(s), 1);
    for (int i = 0; i < 4; i++) {
        g->call[i].done = call_done;
        store_submit(s, &g->call[i]);
    }
    sqlite_writer_hold(writer_of(s), 0);
    wait_calls(4);
}

static void group_run(struct store *s, struct group *g)
{
    group_fill(g);
    group_go(s, g);
}

static int ok(const struct group *g, int i)
{
    return g->call[i].result == STORE_OK;
}

static void group_clear(struct group *g)
{
    job_clear(&g->out_a);
    job_clear(&g->out_b[0]);
    job_clear(&g->out_b[1]);
    job_clear(&g->out_c);
    for (size_t i = 0; i < g->call[3].claim.n; i++)
        job_clear(&g->out_d[i]);
}

/* Each write's effect is in the database exactly when it succeeded, its outputs are filled
 * exactly then, and the hooks ran for exactly those. Returns 0, or -1 (reported). */
static int group_check(const struct group *g, const char *what)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT status FROM jobs WHERE id = %lld", (long long)g->id_c);
    int64_t a = sql_int("SELECT count(*) FROM jobs WHERE queue = 'a'");
    int64_t b = sql_int("SELECT count(*) FROM jobs WHERE queue = 'b'");
    int64_t c = sql_int(sql);
    int64_t d = sql_int("SELECT status FROM jobs WHERE queue = 'd'");
    int bad = a != (ok(g, 0) ? 1 : 0) || b != (ok(g, 1) ? 2 : 0) ||
              c != (ok(g, 2) ? JOB_SUCCEEDED : JOB_RUNNING) ||
              d != (ok(g, 3) ? JOB_RUNNING : SQLITE_SCHEDULED);
    bad = bad || (ok(g, 0) && g->out_a.id <= 0) || (ok(g, 1) && g->out_b[1].id <= 0) ||
          (ok(g, 2) && g->out_c.status != JOB_SUCCEEDED) ||
          g->call[3].claim.n != (ok(g, 3) ? 1u : 0u);
    int want_ready = ok(g, 0) + ok(g, 1) + ok(g, 3); /* a, b, and d promoted */
    if (bad || rec.ready != want_ready || rec.scheduled != 0) {
        fprintf(stderr,
                "%s: results %s %s %s %s; a %lld b %lld c %lld d %lld; claimed %zu; hooks %d/%d\n",
                what, store_result_name(g->call[0].result), store_result_name(g->call[1].result),
                store_result_name(g->call[2].result), store_result_name(g->call[3].result),
                (long long)a, (long long)b, (long long)c, (long long)d, g->call[3].claim.n,
                rec.ready, rec.scheduled);
        return -1;
    }
    return 0;
}

TEST(group_of_independent_writes_commits_once)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    struct group g;
    CHECK(group_setup(s, &g) == 0);
    struct store_stats before, after;
    store_read_stats(s, &before);
    memset(&rec, 0, sizeof rec);
    group_run(s, &g);
    for (int i = 0; i < 4; i++)
        CHECK_INT(g.call[i].result, STORE_OK);
    CHECK(group_check(&g, "clean group") == 0);
    store_read_stats(s, &after);
    CHECK_INT(after.commits - before.commits, 1);
    CHECK_INT(after.ops - before.ops, 4);
    group_clear(&g);
    store_close(s);
    CHECK(integrity_ok());
}

TEST(failing_write_rolls_back_alone)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    struct group g;
    CHECK(group_setup(s, &g) == 0);
    /* C's token is stale: its lease is lost, and B's second job does not fit on the disk
     * (a real SQLITE_FULL from the page limit, in the middle of B). */
    g.token_c[0] = g.token_c[0] == 'A' ? 'B' : 'A';
    sqlite3 *db = writer_of(s)->conn.db;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    int64_t pages = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)pages + 8);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    static char big[64 * 1024];
    memset(big, 'x', sizeof big - 3);
    big[0] = '"';
    big[sizeof big - 2] = '"';
    struct store_stats before, after;
    store_read_stats(s, &before);
    memset(&rec, 0, sizeof rec);
    group_fill(&g);
    g.b[1].payload = big;
    group_go(s, &g);
    CHECK_INT(g.call[0].result, STORE_OK);
    CHECK_INT(g.call[1].result, STORE_UNAVAILABLE);
    CHECK_INT(g.call[2].result, STORE_LEASE_LOST);
    CHECK_INT(g.call[3].result, STORE_OK);
    CHECK(group_check(&g, "one full, one stale") == 0);
    store_read_stats(s, &after);
    CHECK_INT(after.commits - before.commits, 1);
    CHECK_INT(after.ops - before.ops, 2);
    group_clear(&g);
    /* The writes that failed go through once they can. */
    CHECK(sqlite3_exec(db, "PRAGMA max_page_count = 1000000", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(enqueue(s, "b", 0, T0, T0) > 0);
    store_close(s);
    CHECK(integrity_ok());
}

/* Steps of a clean run of the group, counted with a fault that never fires. */
static int group_steps(void)
{
    struct store *s = fresh_store();
    if (!s)
        return -1;
    struct group g;
    if (group_setup(s, &g) != 0) {
        store_close(s);
        return -1;
    }
    memset(&rec, 0, sizeof rec);
    sqlite_conn_fault_run(1 << 30, SQLITE_FULL, 1);
    group_run(s, &g);
    int steps = sqlite_conn_fault_steps();
    sqlite_conn_fault(0, 0);
    int bad = group_check(&g, "reference run");
    for (int i = 0; i < 4; i++)
        bad = bad || g.call[i].result != STORE_OK;
    group_clear(&g);
    store_close(s);
    return bad ? -1 : steps;
}

TEST(failed_commit_fails_the_whole_group)
{
    int steps = group_steps();
    CHECK(steps > 10);
    /* The last step is the COMMIT: an I/O error there fails all four. */
    struct store *s = fresh_store();
    CHECK(s != NULL);
    struct group g;
    CHECK(group_setup(s, &g) == 0);
    char *before = dump();
    CHECK(before != NULL);
    memset(&rec, 0, sizeof rec);
    sqlite_conn_fault(steps, SQLITE_IOERR_FSYNC);
    group_run(s, &g);
    int fired = sqlite_conn_fault_fired();
    sqlite_conn_fault(0, 0);
    char *now = dump();
    int same = now && strcmp(before, now) == 0;
    free(before);
    free(now);
    CHECK_INT(fired, 1);
    for (int i = 0; i < 4; i++)
        CHECK_INT(g.call[i].result, STORE_UNAVAILABLE);
    CHECK(same);
    CHECK(group_check(&g, "failed commit") == 0);
    CHECK(write_lock_free());
    /* A busy COMMIT is retried: all four go through. */
    group_clear(&g);
    CHECK(group_setup(s, &g) == 0); /* new jobs for C and D */
    memset(&rec, 0, sizeof rec);
    sqlite_conn_fault(steps, SQLITE_BUSY);
    group_run(s, &g);
    fired = sqlite_conn_fault_fired();
    sqlite_conn_fault(0, 0);
    CHECK_INT(fired, 1);
    for (int i = 0; i < 4; i++)
        CHECK_INT(g.call[i].result, STORE_OK);
    group_clear(&g);
    store_close(s);
    CHECK(integrity_ok());
}

/* ----- a fault at every step of the group -------------------------------------------------- */

struct fault_mode {
    const char *name;
    int rc;
    int count; /* faults in a row (-1: every step from the Nth on) */
    enum store_result want;
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

/* The group with mode m's fault at step n. *failed is how many writes failed. */
static int group_fault(const struct fault_mode *m, int n, int *reached, int *failed)
{
    char what[96];
    snprintf(what, sizeof what, "group, %s at step %d", m->name, n);
    struct store *s = fresh_store();
    struct group g;
    if (!s || group_setup(s, &g) != 0) {
        store_close(s);
        fprintf(stderr, "%s: setup failed\n", what);
        return -1;
    }
    memset(&rec, 0, sizeof rec);
    sqlite_conn_fault_run(n, m->rc, m->count);
    group_run(s, &g);
    *reached = sqlite_conn_fault_fired() > 0;
    sqlite_conn_fault(0, 0);
    int rc = group_check(&g, what);
    *failed = 0;
    for (int i = 0; i < 4; i++) {
        enum store_result r = g.call[i].result;
        *failed += r != STORE_OK;
        if (r != STORE_OK && (r != m->want || m->want == STORE_OK || !*reached)) {
            fprintf(stderr, "%s: write %d gave %s\n", what, i, store_result_name(r));
            rc = -1;
        }
    }
    if (rc == 0 && !write_lock_free()) {
        fprintf(stderr, "%s: a write transaction was left open\n", what);
        rc = -1;
    }
    group_clear(&g);
    store_close(s);
    if (rc == 0 && !integrity_ok()) {
        fprintf(stderr, "%s: integrity_check failed\n", what);
        rc = -1;
    }
    return rc;
}

TEST(fault_at_every_step_of_a_group)
{
    int rc = 0;
    for (size_t m = 0; rc == 0 && m < sizeof modes / sizeof modes[0]; m++) {
        int reached = 1, n, alone = 0, all = 0;
        for (n = 1; rc == 0 && reached && n <= MAX_STEPS; n++) {
            int failed = 0;
            rc = group_fault(&modes[m], n, &reached, &failed);
            alone += failed == 1;
            all += failed == 4;
        }
        if (rc == 0 && reached) {
            fprintf(stderr, "%s: still failing after %d steps\n", modes[m].name, MAX_STEPS);
            rc = -1;
        }
        /* A single fault inside one write fails that write alone; persistent faults and
         * faults of the runner's own statements fail all four. */
        if (rc == 0 && modes[m].want != STORE_OK && modes[m].count == 1 && alone == 0) {
            fprintf(stderr, "%s: no fault failed a write alone\n", modes[m].name);
            rc = -1;
        }
        if (rc == 0 && modes[m].want != STORE_OK && all == 0) {
            fprintf(stderr, "%s: no fault failed the whole group\n", modes[m].name);
            rc = -1;
        }
    }
    CHECK(rc == 0);
}

TEST_MAIN(TEST_ENTRY(threads_at_once_share_one_commit), TEST_ENTRY(hooks_run_once_per_group),
          TEST_ENTRY(group_of_independent_writes_commits_once),
          TEST_ENTRY(failing_write_rolls_back_alone),
          TEST_ENTRY(failed_commit_fails_the_whole_group),
          TEST_ENTRY(fault_at_every_step_of_a_group))
