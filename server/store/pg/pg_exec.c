/* The PostgreSQL store's executor: the queue of submitted calls and the threads that take
 * them in groups, run the one-statement ones in one pipeline (pg_pipe.c) and the others in
 * one transaction, alone after a split (pg_store.h).
 *
 * How many groups run at once follows the load, up to the writer threads (--pg-writers): a
 * free writer starts a group when admit_wait (server/admit.h) says so. An idle process
 * answers a lone call at once; a busy one lets calls gather into the next group while its
 * others run, and starts another beside them when enough calls wait, or when the newest
 * group has run long enough that waiting for it would cost more than a second transaction
 * (a slow link to the database, or a group stalled on a lock). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "clock.h"
#include "log.h"
#include "pg_store.h"

/* Calls that share one transaction: at most PG_GROUP_MAX (pg_store.h), and at most
 * PG_GROUP_ROWS jobs among them (a batch enqueue counts its jobs, a claim its max_jobs: see
 * the kind table, pg_call.c), so that the transaction, and the row locks it holds, stay
 * short. */
#define PG_GROUP_ROWS 1000

/* Several calls in one transaction: one BEGIN, one NOTIFY and one COMMIT (one WAL flush) for
 * all of them, as the SQLite backend's group commit. A call whose result may follow writes
 * that must be undone (see pg_call) cannot share it: the group rolls back and every call
 * runs alone. */
struct pg_group {
    struct pg_call *calls;
    size_t n, ran;
    int split; /* a call could not share the transaction */
};

static enum store_result group_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_group *g = p;
    for (g->ran = 0; g->ran < g->n; g->ran++) {
        struct pg_call *pc = &g->calls[g->ran];
        if (pc->tx.begin)
            pc->tx.begin(pc); /* after the calls before it, which may have waited */
        enum store_result r = pc->tx.fn(c, pc, notes);
        if (!pg_result_shareable(r) || PQtransactionStatus(c->db) != PQTRANS_INTRANS) {
            if (pc->tx.discard)
                pc->tx.discard(pc);
            g->split = 1;
            return STORE_CONFLICT; /* roll back; not a retry, not an error */
        }
        pc->call->result = r;
    }
    return STORE_OK;
}

static void group_discard(void *p)
{
    struct pg_group *g = p;
    for (size_t i = 0; i < g->ran && i < g->n; i++) {
        if (g->calls[i].tx.discard)
            g->calls[i].tx.discard(&g->calls[i]);
    }
    g->ran = 0;
}

/* Run the n calls alone when n is 1, else together (alone after a split). */
static void run_group(struct pg_store *st, struct pg_call *calls, size_t n)
{
    if (n == 0)
        return;
    if (n > 1) {
        struct pg_group g = {.calls = calls, .n = n};
        struct pg_tx tx = {
            .name = "group", .ops = n, .fn = group_tx, .discard = group_discard, .arg = &g};
        enum store_result r = pg_tx_run(st, &tx);
        if (!g.split) {
            if (r != STORE_OK) { /* the transaction failed as a whole */
                for (size_t i = 0; i < n; i++)
                    calls[i].call->result = r;
            }
            return;
        }
    }
    for (size_t i = 0; i < n; i++)
        calls[i].call->result = pg_tx_run(st, &calls[i].tx);
}

/* Run the n calls that pg_pipe_arrange laid out: the first `ones` (one-statement calls, in
 * their units) in one pipeline, the others alone when there is one, else together in one
 * transaction (alone after a split); when the pipeline did not run, every call that way. */
static void run_calls(struct pg_store *st, struct pg_call *calls, size_t n, size_t ones,
                      const struct pg_unit *units, size_t nu)
{
    if (ones > 0 && pg_pipe_run(st, calls, ones, units, nu) == PG_PIPE_DONE) {
        calls += ones;
        n -= ones;
    }
    run_group(st, calls, n);
}

/* Detach the next group of queued calls (st->qmu held, the queue not empty) into nodes[]:
 * at most PG_GROUP_MAX calls and PG_GROUP_ROWS rows. After store_abandon each ends
 * STORE_UNAVAILABLE without running (its result is set here). Returns how many. */
static size_t take_group(struct pg_store *st, struct pg_call_node **nodes)
{
    size_t n = 0, rows = 0;
    while (st->head && n < PG_GROUP_MAX) {
        struct pg_call_node *node = st->head;
        if (n > 0 && rows + node->pc.rows > PG_GROUP_ROWS)
            break;
        rows += node->pc.rows;
        node->skip = atomic_load(&st->abandoned);
        if (node->skip)
            node->pc.call->result = STORE_UNAVAILABLE; /* shutdown: do not start it */
        nodes[n++] = node;
        st->head = node->next;
        st->queued--;
    }
    if (!st->head)
        st->tail = NULL;
    return n;
}

/* Run the group nodes[0..n) (taken by take_group; freed here) and end each of its calls. */
static void run_taken(struct pg_store *st, struct pg_call_node **nodes, size_t n)
{
    struct pg_call calls[PG_GROUP_MAX];
    struct pg_unit units[PG_GROUP_MAX];
    const struct pg_call *run[PG_GROUP_MAX] = {0};
    struct store_call *skipped[PG_GROUP_MAX];
    size_t k = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i]->skip)
            run[k++] = &nodes[i]->pc;
        else
            skipped[ns++] = nodes[i]->pc.call;
    }
    size_t nu = 0;
    size_t ones = pg_pipe_arrange(run, k, calls, units, &nu);
    for (size_t i = 0; i < n; i++)
        free(nodes[i]);
    if (k > 0)
        run_calls(st, calls, k, ones, units, nu);
    for (size_t i = 0; i < k; i++)
        pg_call_answer(&calls[i]); /* those the pipeline did not answer at its commit */
    for (size_t i = 0; i < ns; i++)
        skipped[i]->done(skipped[i]);
}

/* Account for a change of st->inflight by delta at now_us (st->qmu held). */
static void inflight_add(struct pg_store *st, int delta, int64_t now_us)
{
    if (st->inflight_at_us > 0 && now_us > st->inflight_at_us)
        st->inflight_us += (uint64_t)st->inflight * (uint64_t)(now_us - st->inflight_at_us);
    st->inflight_at_us = now_us;
    st->inflight += delta;
}

/* 0 when a free writer may start a group now; else how long (microseconds) until it may,
 * unless something changes: -1 for "until woken" (st->qmu held). */
static int64_t admit_in(const struct pg_store *st, int64_t now_us)
{
    if (st->head && (atomic_load(&st->abandoned) || st->stop))
        return 0; /* each call ends at once (take_group) */
    struct admit_state a = {.inflight = st->inflight,
                            .queued = st->queued,
                            .group_max = PG_GROUP_MAX,
                            .group_us = st->tx_us,
                            .usual_us = admit_usual(&st->tx_times),
                            .rtt_us = atomic_load(&st->rtt_us),
                            .since_start_us = now_us - st->started_us,
                            .cpus = st->cpus};
    return admit_wait(&a);
}

/* Wait on st->qcv for at most us microseconds (st->qmu held). */
static void wait_us(struct pg_store *st, int64_t us)
{
    int64_t at = clock_mono_us() + us;
    struct timespec ts = clock_ts_us(at);
    pthread_cond_timedwait(&st->qcv, &st->qmu, &ts);
}

static void *exec_main(void *arg)
{
    struct pg_store *st = arg;
    struct pg_call_node *nodes[PG_GROUP_MAX];
    pthread_mutex_lock(&st->qmu);
    for (;;) {
        int64_t wait;
        while ((wait = admit_in(st, clock_mono_us())) != 0 && !st->stop) {
            if (wait < 0) {
                pthread_cond_wait(&st->qcv, &st->qmu);
            } else {
                st->timed++;
                wait_us(st, wait);
                st->timed--;
            }
        }
        if (!st->head)
            break; /* stop, and the queue is empty */
        size_t n = take_group(st, nodes);
        int64_t t0 = clock_mono_us();
        inflight_add(st, 1, t0);
        st->started_us = t0;
        st->groups++;
        pthread_mutex_unlock(&st->qmu);
        run_taken(st, nodes, n);
        pthread_mutex_lock(&st->qmu);
        int64_t t1 = clock_mono_us();
        inflight_add(st, -1, t1);
        if (!atomic_load(&st->abandoned)) {
            st->tx_us += (t1 - t0 - st->tx_us) / 8;
            admit_record(&st->tx_times, t1 - t0);
        }
        /* This writer looks at the queue next: no one else needs waking for it. */
    }
    pthread_mutex_unlock(&st->qmu);
    return NULL;
}

int pg_exec_start(struct pg_store *st, int nthreads)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    st->cpus = cpus >= 1 ? (int)(cpus < 4096 ? cpus : 4096) : 1;
    pthread_mutex_init(&st->qmu, NULL);
    clock_cond_init(&st->qcv);
    st->threads = calloc((size_t)nthreads, sizeof *st->threads);
    if (!st->threads) {
        log_error("out of memory for %d executor threads", nthreads);
        return -1;
    }
    for (int i = 0; i < nthreads; i++) {
        int rc = pthread_create(&st->threads[i], NULL, exec_main, st);
        if (rc != 0) {
            log_error("cannot start an executor thread: %s", strerror(rc));
            pg_exec_stop(st);
            return -1;
        }
        st->nthreads++;
    }
    return 0;
}

void pg_exec_stop(struct pg_store *st)
{
    if (!st->threads)
        return;
    pthread_mutex_lock(&st->qmu);
    st->stop = 1;
    pthread_cond_broadcast(&st->qcv);
    pthread_mutex_unlock(&st->qmu);
    for (int i = 0; i < st->nthreads; i++)
        pthread_join(st->threads[i], NULL);
    free(st->threads);
    st->threads = NULL;
    st->nthreads = 0;
    pthread_cond_destroy(&st->qcv);
    pthread_mutex_destroy(&st->qmu);
}

int pg_exec_push(struct pg_store *st, struct pg_call_node *node)
{
    node->next = NULL;
    node->at_us = clock_mono_us();
    pthread_mutex_lock(&st->qmu);
    if (st->stop) {
        pthread_mutex_unlock(&st->qmu);
        return -1;
    }
    if (st->tail)
        st->tail->next = node;
    else
        st->head = node;
    st->tail = node;
    st->queued++;
    /* Wake a writer only when the call may start a group: fewer in flight than may start at
     * once (one takes it), the join count reached (every waiter looks), or no writer on a
     * timer yet (one arms it). Else the writer whose group ends next, or the one on the
     * timer, takes it: a wake-up per call would cost more than it saves. */
    if (st->inflight < admit_free(st->cpus))
        pthread_cond_signal(&st->qcv);
    else if (st->queued >= PG_GROUP_MAX)
        pthread_cond_broadcast(&st->qcv);
    else if (st->timed == 0)
        pthread_cond_signal(&st->qcv);
    pthread_mutex_unlock(&st->qmu);
    return 0;
}

void pg_exec_wake(struct pg_store *st)
{
    pthread_mutex_lock(&st->qmu);
    pthread_cond_broadcast(&st->qcv);
    pthread_mutex_unlock(&st->qmu);
}

void pg_exec_figures(struct pg_store *st, struct pg_exec_figures *out)
{
    pthread_mutex_lock(&st->qmu);
    int64_t now = clock_mono_us();
    uint64_t us = st->inflight_us;
    if (st->inflight_at_us > 0 && now > st->inflight_at_us)
        us += (uint64_t)st->inflight * (uint64_t)(now - st->inflight_at_us);
    *out = (struct pg_exec_figures){
        .inflight = st->inflight, .writers = st->nthreads, .inflight_us = us, .groups = st->groups};
    pthread_mutex_unlock(&st->qmu);
}
