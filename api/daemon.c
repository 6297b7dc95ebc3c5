/* The process's parts, in order (daemon.h). */
#include "daemon.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "auth.h"
#include "handlers.h"
#include "http.h"
#include "log.h"
#include "sqs.h"
#include "sqs_cache.h"
#include "store.h"
#include "sweeper.h"
#include "ticker.h"
#include "waitq.h"
#include "whdeliver.h"

#ifndef JOBQ_VERSION
#define JOBQ_VERSION "dev"
#endif

/* After store_abandon(): how long the calls in progress may take to end. Cancelled PostgreSQL
 * statements end at once; a SQLite call stuck on the disk may not end at all. */
#define ABANDON_WAIT_MS 5000

/* Waiters woken beyond the jobs that became ready: a woken claim may lose its job to a claim
 * that did not wait, or its client may be gone (h_worker.c then wakes another). */
#define WAKE_MARGIN 1

struct daemon {
    const struct config *cfg;
    struct auth *auth;
    struct store *store;
    /* The store's hooks reach these. The store is opened first (the wait queue's recheck
     * depends on it), so they are published once made; the stop frees them only after the
     * store, whose threads call the hooks, is closed. */
    _Atomic(struct waitq *) waitq;
    _Atomic(struct sweeper *) sweeper;
    struct ticker *ticker;      /* the schedules' ticks: stopped first */
    struct whdeliver *webhooks; /* webhook delivery: stopped after the HTTP server */
    struct http_server *http;
    struct app app;
    struct http_server *sqs; /* --sqs-listen (sqs.h); NULL without */
    struct app sqs_app;
};

static void hook_ready(void *arg, const char *queue)
{
    struct daemon *d = arg;
    waitq_notify(atomic_load(&d->waitq), queue);
}

static void hook_ready_some(void *arg, const char *queue, int jobs)
{
    struct daemon *d = arg;
    waitq_notify_some(atomic_load(&d->waitq), queue, (size_t)jobs + WAKE_MARGIN);
}

static void hook_lost(void *arg)
{
    struct daemon *d = arg;
    waitq_notify_all(atomic_load(&d->waitq));
}

static void hook_scheduled(void *arg, int64_t run_at)
{
    struct daemon *d = arg;
    sweeper_poke(atomic_load(&d->sweeper), run_at);
}

/* Load the token file when one is given, and the SQS access keys of --sqs-key beside its own.
 * Returns 0 with *out set (NULL: authentication off), or -1 (logged, naming the line or key
 * but never a token or secret). */
static int load_tokens(const struct config *cfg, struct auth **out)
{
    *out = NULL;
    if (cfg->auth_token_file[0] == '\0')
        return 0;
    char err[512];
    if (auth_load_file(cfg->auth_token_file, out, err, sizeof err) != 0 ||
        auth_add_sqs_keys(*out, cfg->sqs_keys, "--sqs-key", err, sizeof err) != 0) {
        log_error("%s", err);
        auth_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* Say whether clients must authenticate, and loudly when they need not. */
static void log_access(const struct config *cfg, const struct auth *auth, const char *where)
{
    if (auth) {
        size_t n = auth_count(auth, AUTH_ROLE_NONE);
        log_info("authentication on: %zu bearer token%s (%zu producer, %zu worker, %zu admin) "
                 "from %s",
                 n, n == 1 ? "" : "s", auth_count(auth, AUTH_ROLE_PRODUCER),
                 auth_count(auth, AUTH_ROLE_WORKER), auth_count(auth, AUTH_ROLE_ADMIN),
                 cfg->auth_token_file);
    } else if (cfg->insecure_listen_any) {
        log_warn("AUTHENTICATION IS OFF and --insecure-listen-any is set: anyone who can reach "
                 "%s can enqueue, claim, cancel and read every job. Give --auth-token-file",
                 where);
    } else {
        log_warn("AUTHENTICATION IS OFF: every local process that can reach %s can enqueue, "
                 "claim, cancel and read every job. Give --auth-token-file to require tokens",
                 where);
    }
}

/* The one cleanup path: free whatever started, callers of each part before the part. The
 * HTTP server is stopped already (or never started). The sweeper goes before the store it
 * sweeps; the store (its writer, executor and listener threads call the hooks) before the wait
 * queue and the sweeper pointer the hooks read. */
static void daemon_free(struct daemon *d)
{
    ticker_stop(d->ticker);
    d->ticker = NULL;
    whdeliver_stop(d->webhooks);
    d->webhooks = NULL;
    struct sweeper *sw = atomic_exchange(&d->sweeper, NULL);
    sweeper_stop(sw);
    store_close(d->store);
    waitq_free(atomic_exchange(&d->waitq, NULL));
    sqs_cache_free(d->sqs_app.sqs_cache);
    auth_free(d->auth);
    free(d);
}

static struct store *open_store(struct daemon *d)
{
    const struct config *cfg = d->cfg;
    struct store_options opts = {
        .url = cfg->db_path,
        .backoff_base = cfg->backoff_base,
        .backoff_max = cfg->backoff_max,
        .events = {.retention = cfg->events_retention, .max = cfg->events_max},
        .hooks = {.on_ready = hook_ready,
                  .on_scheduled = hook_scheduled,
                  .ctx = d,
                  .on_ready_some = hook_ready_some,
                  .on_lost = hook_lost},
        .sqlite = {.sync_full = cfg->sync_full, .readers = cfg->readers},
        .pg = {.pool_size = cfg->pool_size,
               .writers = cfg->pg_writers,
               .checkout_ms = cfg->pg_checkout_ms,
               .statement_ms = cfg->pg_statement_ms,
               .connect_timeout_s = 5},
    };
    return store_open(&opts);
}

/* What the SQS queue URLs start with: --sqs-base-url without its trailing '/', else the
 * scheme, host and port of the SQS listener. */
static void sqs_base_url(const struct config *cfg, int port, char *out, size_t len)
{
    int v6 = strchr(cfg->sqs_listen_host, ':') != NULL;
    if (cfg->sqs_base_url[0])
        snprintf(out, len, "%s", cfg->sqs_base_url);
    else
        snprintf(out, len, "%s://%s%s%s:%d", cfg->tls_cert[0] ? "https" : "http", v6 ? "[" : "",
                 cfg->sqs_listen_host, v6 ? "]" : "", port);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

/* Start the SQS listener (--sqs-listen) with an app of its own (its readers, its count of
 * store calls). Returns 0, or -1 (logged). */
static int start_sqs(struct daemon *d)
{
    const struct config *cfg = d->cfg;
    if (d->auth)
        log_info("sqs: SigV4 signatures required: %zu access key%s", auth_sqs_key_count(d->auth),
                 auth_sqs_key_count(d->auth) == 1 ? "" : "s");
    if (d->auth && auth_sqs_key_count(d->auth) == 0)
        log_warn("sqs: authentication is on and no access key is given (--sqs-key or a "
                 "KEY:SECRET:ROLE line in the token file): every SQS request will be refused");
    d->sqs_app.auth = d->auth;
    d->sqs_app.sqs_cache = sqs_cache_new();
    if (!d->sqs_app.sqs_cache) {
        log_error("out of memory starting the sqs listener");
        return -1;
    }
    d->sqs_app.store = d->store;
    d->sqs_app.waitq = d->app.waitq;
    d->sqs_app.cfg = cfg;
    sqs_base_url(cfg, cfg->sqs_listen_port, d->sqs_app.base_url, sizeof d->sqs_app.base_url);
    struct http_front front = {
        .host = cfg->sqs_listen_host, .port = cfg->sqs_listen_port, .serve = sqs_serve};
    d->sqs = http_start(&d->sqs_app, &front);
    if (!d->sqs)
        return -1;
    if (cfg->sqs_listen_port == 0) /* port 0: the one bound */
        sqs_base_url(cfg, http_port(d->sqs), d->sqs_app.base_url, sizeof d->sqs_app.base_url);
    log_info("sqs listening on port %d (queue URLs start with %s)", http_port(d->sqs),
             d->sqs_app.base_url);
    return 0;
}

struct daemon *daemon_start(const struct config *cfg)
{
    struct daemon *d = calloc(1, sizeof *d);
    if (!d) {
        log_error("out of memory");
        return NULL;
    }
    d->cfg = cfg;
    char db_shown[512];
    store_url_redact(cfg->db_path, db_shown, sizeof db_shown);
    if (load_tokens(cfg, &d->auth) != 0)
        goto fail;
    d->store = open_store(d);
    if (!d->store) {
        log_error("cannot open the database %s", db_shown);
        goto fail;
    }
    /* Where other processes write too, a parked long poll looks again now and then by itself:
     * their news (LISTEN/NOTIFY) is a hint that may be lost. */
    struct waitq *waitq = waitq_new(d->store->shared ? WAITQ_RECHECK_MS : 0);
    if (!waitq)
        goto fail;
    atomic_store(&d->waitq, waitq);
    struct sweeper *sweeper = sweeper_start(d->store, cfg->sweep_interval, cfg->retention);
    if (!sweeper)
        goto fail;
    atomic_store(&d->sweeper, sweeper);
    d->ticker = ticker_start(d->store, &schedule_job_fns);
    if (!d->ticker)
        goto fail;
    d->webhooks = whdeliver_start(d->store, cfg->webhook_retry_base, cfg->webhook_allow_private);
    if (!d->webhooks)
        goto fail;
    d->app.webhooks = d->webhooks;
    d->app.store = d->store;
    d->app.waitq = waitq;
    d->app.cfg = cfg;
    d->app.auth = d->auth;
    struct http_front native = {.host = cfg->listen_host, .port = cfg->listen_port};
    d->http = http_start(&d->app, &native);
    if (!d->http)
        goto fail;
    if (cfg->sqs_listen_host[0] && start_sqs(d) != 0) {
        http_stop(d->http, 0);
        d->http = NULL;
        goto fail;
    }
    int v6 = strchr(cfg->listen_host, ':') != NULL;
    char where[300];
    snprintf(where, sizeof where, "%s%s%s:%d", v6 ? "[" : "", cfg->listen_host, v6 ? "]" : "",
             http_port(d->http));
    log_info("jobqd %s listening on %s (db %s, tls %s)", JOBQ_VERSION, where, db_shown,
             cfg->tls_cert[0] ? "on" : "off");
    log_access(cfg, d->auth, where);
    return d;
fail:
    daemon_free(d);
    return NULL;
}

int daemon_stop(struct daemon *d, int timeout_ms)
{
    if (!d)
        return 0;
    http_quiesce(d->http);
    http_quiesce(d->sqs);
    ticker_stop(d->ticker); /* no tick starts from now on; the one in progress ends */
    d->ticker = NULL;
    waitq_shutdown(atomic_load(&d->waitq)); /* parked long polls answer {"jobs": []} */
    long left = http_drain(d->http, timeout_ms);
    left += http_drain(d->sqs, timeout_ms);
    if (left > 0)
        store_abandon(d->store); /* store calls that outlive the timeout end now, as 503s */
    if (http_stop(d->sqs, ABANDON_WAIT_MS) != 0 || http_stop(d->http, ABANDON_WAIT_MS) != 0) {
        /* A call is stuck in the database (a disk that does not answer): its connection is
         * suspended, so neither the server nor the store can be freed. Nothing it did was
         * acknowledged; its client sees the connection close and retries. */
        log_error("exiting without closing the database");
        _exit(1);
    }
    daemon_free(d);
    return 0;
}
