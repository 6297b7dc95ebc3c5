/* pg_store_open: the PostgreSQL store's handle and its ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pg_open.h"
#include "pg_schema.h"
#include "pg_store.h"
#include "rand.h"

#define POOL_MAX 256

static void pg_store_close(struct store *s);

/* store_abandon: calls end STORE_UNAVAILABLE from now on (queued ones without running, a
 * wait for a connection at once), and the statements running now are cancelled. */
static void pg_store_abandon(struct store *s)
{
    struct pg_store *st = pg_store_of(s);
    atomic_store(&st->abandoned, 1);
    pg_exec_wake(st);
    pg_pool_abandon(st);
}

static const struct store_ops pg_ops = {
    .submit = pg_submit,
    .get = pg_read_get,
    .list = pg_read_list,
    .queues = pg_read_queues,
    .attempts = pg_read_attempts,
    .events = pg_events_read,
    .limits = pg_read_limits,
    .links = pg_read_links,
    .schedules = pg_read_schedules,
    .schedules_next = pg_read_schedules_next,
    .schedules_count = pg_read_schedules_count,
    .sqs_queues = pg_read_sqs_queues,
    .webhooks = pg_read_webhooks,
    .throughput_publish = pg_throughput_publish,
    .throughput_others = pg_throughput_others,
    .sweep = pg_sweep,
    .next_due = NULL, /* claims see due jobs by themselves */
    .ping = pg_read_ping,
    .clock = pg_clock,
    .stats = pg_read_stats,
    .metrics = pg_read_metrics,
    .abandon = pg_store_abandon,
    .close = pg_store_close,
};

/* Connect once, migrate, measure the clock. Returns 0, or -1 (logged). */
static int bootstrap(struct pg_store *st)
{
    struct pg_conn c = {0};
    if (pg_conn_open(st, &c) != STORE_OK) {
        log_error("postgresql: cannot connect (see the line above)");
        return -1;
    }
    int rc = pg_schema_migrate(c.db) == 0 && pg_clock_sync(st, &c) == STORE_OK ? 0 : -1;
    int64_t skew = atomic_load(&st->skew_ms);
    if (rc == 0 && (skew > 2000 || skew < -2000))
        log_warn("postgresql: this host's clock is %lld ms %s the database's; leases follow the "
                 "database's clock",
                 (long long)(skew > 0 ? skew : -skew), skew > 0 ? "behind" : "ahead of");
    pg_conn_close(&c);
    return rc;
}

struct store *pg_store_open(const struct store_options *opts)
{
    struct pg_store *st = calloc(1, sizeof *st);
    if (!st || !(st->url = strdup(opts->url)) || !(st->due = calloc(PG_DUE_MAX, sizeof *st->due))) {
        log_error("out of memory opening the store");
        if (st)
            free(st->url);
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->due_mu, NULL);
    st->base.ops = &pg_ops;
    st->base.shared = 1;
    st->backoff_base = opts->backoff_base;
    st->events_retention =
        opts->events.retention > 0 ? opts->events.retention : EVENT_RETENTION_DEFAULT;
    st->events_max = opts->events.max > 0 ? opts->events.max : EVENT_MAX_DEFAULT;
    st->backoff_max = opts->backoff_max;
    st->hooks = opts->hooks;
    st->checkout_ms = opts->pg.checkout_ms > 0 ? opts->pg.checkout_ms : 5000;
    st->statement_ms = opts->pg.statement_ms > 0 ? opts->pg.statement_ms : 5000;
    st->connect_timeout_s = opts->pg.connect_timeout_s > 0 ? opts->pg.connect_timeout_s : 5;
    int pool = opts->pg.pool_size < 1          ? 1
               : opts->pg.pool_size > POOL_MAX ? POOL_MAX
                                               : opts->pg.pool_size;
    char tag[JOB_TOKEN_LEN + 1];
    if (rand_token(tag) != 0)
        strcpy(tag, "00000000");
    tag[8] = '\0'; /* 48 random bits tell this process's notifications from the others' */
    snprintf(st->proc, sizeof st->proc, "%d.%s", (int)getpid(), tag);
    /* The writers may hold all the pool but one connection for the sweeper and one for
     * reads; --pg-writers asks for fewer (or for more, which the pool then bounds). Reads
     * may hold all but two (one for a writer, one for the sweeper), as with one writer:
     * writers and reads share the rest as their loads ask. */
    int writers = pool > 2 ? pool - 2 : 1;
    if (opts->pg.writers > 0 && opts->pg.writers < writers)
        writers = opts->pg.writers;
    if (bootstrap(st) != 0 || pg_pool_init(&st->pool, pool, 2, &st->trips) != 0) {
        pthread_mutex_destroy(&st->due_mu);
        free(st->due);
        free(st->url);
        free(st);
        return NULL;
    }
    if (pg_exec_start(st, writers) != 0 || pg_listen_start(st) != 0 || pg_stats_start(st) != 0) {
        pg_store_close(&st->base);
        return NULL;
    }
    log_info("postgresql store open (schema %d, pool %d, writers %d, statement timeout %lld ms)",
             pg_schema_version(), pool, writers, (long long)st->statement_ms);
    return &st->base;
}

static void pg_store_close(struct store *s)
{
    struct pg_store *st = pg_store_of(s);
    pg_stats_stop(st);
    pg_exec_stop(st); /* first: its threads hand notifications to the listener */
    pg_listen_stop(st);
    pg_pool_destroy(&st->pool);
    pthread_mutex_destroy(&st->due_mu);
    free(st->due);
    free(st->url);
    free(st);
}
