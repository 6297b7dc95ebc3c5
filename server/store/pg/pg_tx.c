/* The PostgreSQL store's transaction runner and its executor threads (store_submit). */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_store.h"

void pg_notes_ready(struct pg_notes *n, const char *queue)
{
    if (n->all)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (strcmp(n->queues[i], queue) == 0) {
            n->jobs[i]++;
            return;
        }
    }
    char *copy = n->n < JOB_QUEUES_MAX ? strdup(queue) : NULL;
    if (!copy) {
        n->all = 1; /* too many queues, or no memory: wake everyone instead */
        return;
    }
    n->queues[n->n] = copy;
    n->jobs[n->n++] = 1;
}

static void notes_clear(struct pg_notes *n)
{
    for (size_t i = 0; i < n->n; i++)
        free(n->queues[i]);
    memset(n, 0, sizeof *n);
}

int pg_text_array(char *buf, size_t size, const char *const *items, size_t n)
{
    size_t u = 0;
#define PUT(ch)                                                                                    \
    do {                                                                                           \
        if (u + 2 > size)                                                                          \
            return -1;                                                                             \
        buf[u++] = (ch);                                                                           \
    } while (0)
    PUT('{');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            PUT(',');
        PUT('"');
        for (const char *p = items[i]; *p; p++) {
            if (*p == '"' || *p == '\\')
                PUT('\\');
            PUT(*p);
        }
        PUT('"');
    }
    PUT('}');
#undef PUT
    buf[u] = '\0';
    return 0;
}

/* NOTIFY every noted queue, inside the transaction: delivered at commit, once per queue. */
static enum store_result announce(struct pg_store *st, struct pg_conn *c, struct pg_notes *n)
{
    if (n->n == 0 && !n->all)
        return STORE_OK;
    char list[JOB_QUEUES_MAX * (JOB_QUEUE_MAX + 4) + 8];
    const char *all[1] = {"*"};
    if (pg_text_array(list, sizeof list, n->all ? all : (const char *const *)n->queues,
                      n->all ? 1 : n->n) != 0)
        return STORE_ERROR;
    const char *params[2] = {st->proc, list};
    enum store_result r;
    PGresult *res = pg_exec(c, PG_NOTIFY, 2, params, "notify", &r);
    PQclear(res);
    return r;
}

/* After a commit, from this thread: the local hooks. */
static void fire_hooks(struct pg_store *st, const struct pg_notes *n)
{
    const struct store_hooks *h = &st->hooks;
    if (n->all) {
        if (h->on_lost)
            h->on_lost(h->ctx);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        if (h->on_ready)
            h->on_ready(h->ctx, n->queues[i]);
    }
}

enum store_result pg_tx_run(struct pg_store *st, const struct pg_tx *tx)
{
    enum store_result r = STORE_ERROR;
    for (int attempt = 0; attempt < PG_TX_TRIES; attempt++) {
        if (attempt > 0)
            atomic_fetch_add(&st->retries, 1);
        struct pg_conn *c = NULL;
        r = pg_pool_take(st, &c);
        if (r != STORE_OK)
            break;
        r = pg_command(c, "BEGIN", tx->name);
        if (r != STORE_OK) {
            /* Nothing was sent but BEGIN: a connection that died while idle in the pool (a
             * restart, pg_terminate_backend, a failover) is safe to replace and try again. */
            pg_pool_give(st, c);
            if (r == STORE_UNAVAILABLE || r == STORE_BUSY)
                continue;
            break;
        }
        struct pg_notes notes = {0};
        r = tx->fn(c, tx->arg, &notes);
        if (r == STORE_OK || r == STORE_EXISTS) {
            enum store_result a = announce(st, c, &notes);
            if (a != STORE_OK)
                r = a;
        }
        int committed = 0;
        if (r == STORE_OK || r == STORE_EXISTS) {
            /* A COMMIT that fails on a lost connection may have committed: 503, and the
             * client retries (at least once, as documented). */
            enum store_result cr = pg_command(c, "COMMIT", tx->name);
            if (cr == STORE_OK)
                committed = 1;
            else
                r = cr;
        } else {
            pg_command(c, "ROLLBACK", tx->name); /* a failure marks the connection bad */
        }
        pg_pool_give(st, c);
        if (committed) {
            atomic_fetch_add(&st->commits, 1);
            fire_hooks(st, &notes);
            notes_clear(&notes);
            return r;
        }
        notes_clear(&notes);
        if (tx->discard)
            tx->discard(tx->arg);
        if (r != STORE_BUSY)
            break;
    }
    if (r == STORE_BUSY || r == STORE_UNAVAILABLE || r == STORE_ERROR)
        atomic_fetch_add(&st->errors, 1);
    return r;
}

/* One queued call. */
struct pg_job_node {
    struct store_call *call;
    struct pg_job_node *next;
};

static void run_call(struct pg_store *st, struct store_call *call)
{
    switch (call->kind) {
    case STORE_CALL_ENQUEUE:
        pg_enqueue_call(st, call);
        break;
    case STORE_CALL_CLAIM:
        pg_claim_call(st, call);
        break;
    case STORE_CALL_HEARTBEAT:
    case STORE_CALL_COMPLETE:
    case STORE_CALL_FAIL:
        pg_lease_call(st, call);
        break;
    case STORE_CALL_CANCEL:
    case STORE_CALL_RETRY:
        pg_admin_call(st, call);
        break;
    default:
        call->result = STORE_ERROR;
        break;
    }
}

static void *exec_main(void *arg)
{
    struct pg_store *st = arg;
    pthread_mutex_lock(&st->qmu);
    for (;;) {
        while (!st->head && !st->stop)
            pthread_cond_wait(&st->qcv, &st->qmu);
        struct pg_job_node *node = st->head;
        if (!node)
            break; /* stop, and the queue is empty */
        st->head = node->next;
        if (!st->head)
            st->tail = NULL;
        pthread_mutex_unlock(&st->qmu);
        struct store_call *call = node->call;
        free(node);
        run_call(st, call);
        call->done(call);
        pthread_mutex_lock(&st->qmu);
    }
    pthread_mutex_unlock(&st->qmu);
    return NULL;
}

int pg_exec_start(struct pg_store *st, int nthreads)
{
    pthread_mutex_init(&st->qmu, NULL);
    pthread_cond_init(&st->qcv, NULL);
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

void pg_submit(struct store *s, struct store_call *call)
{
    struct pg_store *st = pg_store_of(s);
    struct pg_job_node *node = malloc(sizeof *node);
    if (!node) {
        log_error("out of memory queueing a store call");
        call->result = STORE_ERROR;
        call->done(call);
        return;
    }
    node->call = call;
    node->next = NULL;
    pthread_mutex_lock(&st->qmu);
    if (st->stop) {
        pthread_mutex_unlock(&st->qmu);
        free(node);
        call->result = STORE_UNAVAILABLE;
        call->done(call);
        return;
    }
    if (st->tail)
        st->tail->next = node;
    else
        st->head = node;
    st->tail = node;
    pthread_cond_signal(&st->qcv);
    pthread_mutex_unlock(&st->qmu);
}
