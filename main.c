/* jobqd: read the configuration, start the parts, wait for SIGTERM/SIGINT, stop them in
 * order; or run a subcommand (jobqd migrate). Everything else lives in the library. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "auth.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "migrate.h"
#include "store.h"
#include "sweeper.h"
#include "waitq.h"

#ifndef JOBQ_VERSION
#define JOBQ_VERSION "dev"
#endif

/* How long a graceful stop waits for requests in flight. */
#define STOP_TIMEOUT_MS 10000
/* After store_abandon(): how long the calls in progress may take to end. Cancelled PostgreSQL
 * statements end at once; a SQLite call stuck on the disk may not end at all. */
#define ABANDON_WAIT_MS 5000

/* The store's hooks run on request and sweeper threads. The store is opened before the parts
 * they reach exist, so they go through this struct, filled as the parts start and emptied
 * before the parts are freed. */
struct hook_ctx {
    _Atomic(struct waitq *) waitq;
    _Atomic(struct sweeper *) sweeper;
};

static void hook_ready(void *arg, const char *queue)
{
    struct hook_ctx *c = arg;
    waitq_notify(atomic_load(&c->waitq), queue);
}

/* Waiters woken beyond the jobs that became ready: a woken claim may lose its job to a claim
 * that did not wait, or its client may be gone (h_worker.c then wakes another). */
#define WAKE_MARGIN 1

static void hook_ready_some(void *arg, const char *queue, int jobs)
{
    struct hook_ctx *c = arg;
    waitq_notify_some(atomic_load(&c->waitq), queue, (size_t)jobs + WAKE_MARGIN);
}

static void hook_lost(void *arg)
{
    struct hook_ctx *c = arg;
    waitq_notify_all(atomic_load(&c->waitq));
}

static void hook_scheduled(void *arg, int64_t run_at)
{
    struct hook_ctx *c = arg;
    sweeper_poke(atomic_load(&c->sweeper), run_at);
}

/* Load the token file when one is given. Returns 0 with *out set (NULL: authentication off),
 * or -1 (logged, naming the line but never a token). */
static int load_tokens(const struct config *cfg, struct auth **out)
{
    *out = NULL;
    if (cfg->auth_token_file[0] == '\0')
        return 0;
    char err[512];
    if (auth_load_file(cfg->auth_token_file, out, err, sizeof err) != 0) {
        log_error("%s", err);
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

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "migrate") == 0)
        return migrate_main(argc - 1, argv + 1);
    static struct config cfg;
    switch (config_load(&cfg, argc, argv, stderr)) {
    case CONFIG_OK:
        break;
    case CONFIG_HELP:
        config_usage(stdout, "jobqd");
        return 0;
    case CONFIG_VERSION:
        printf("jobqd %s\n", JOBQ_VERSION);
        return 0;
    case CONFIG_INVALID:
    default:
        return 1;
    }
    enum log_level level = LOG_INFO;
    log_level_parse(cfg.log_level, &level); /* validated by config_load */
    log_set_level(level);
    log_set_json(cfg.log_json);
    log_set_access(cfg.access_log);

    /* Block the signals in every thread before any starts; main takes them with sigwait(). A
     * write to a closed socket then fails with EPIPE instead of killing the process. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGPIPE);
    int rc = pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    if (rc != 0) {
        log_error("cannot block signals: %s", strerror(rc));
        return 1;
    }
    sigdelset(&sigs, SIGPIPE);

    static struct hook_ctx hooks;
    struct store_options opts = {
        .url = cfg.db_path,
        .backoff_base = cfg.backoff_base,
        .backoff_max = cfg.backoff_max,
        .hooks = {.on_ready = hook_ready,
                  .on_scheduled = hook_scheduled,
                  .ctx = &hooks,
                  .on_ready_some = hook_ready_some,
                  .on_lost = hook_lost},
        .sqlite = {.sync_full = cfg.sync_full, .readers = cfg.readers},
        .pg = {.pool_size = cfg.pool_size,
               .checkout_ms = cfg.pg_checkout_ms,
               .statement_ms = cfg.pg_statement_ms,
               .connect_timeout_s = 5},
    };
    struct auth *auth = NULL;
    if (load_tokens(&cfg, &auth) != 0)
        return 1;
    char db_shown[512];
    store_url_redact(cfg.db_path, db_shown, sizeof db_shown);
    struct store *store = store_open(&opts);
    if (!store) {
        log_error("cannot open the database %s", db_shown);
        auth_free(auth);
        return 1;
    }
    /* Where other processes write too, a parked long poll looks again now and then by itself:
     * their news (LISTEN/NOTIFY) is a hint that may be lost. */
    struct waitq *waitq = waitq_new(store->shared ? WAITQ_RECHECK_MS : 0);
    if (!waitq) {
        store_close(store);
        auth_free(auth);
        return 1;
    }
    atomic_store(&hooks.waitq, waitq);
    struct sweeper *sweeper = sweeper_start(store, cfg.sweep_interval, cfg.retention);
    if (!sweeper) {
        atomic_store(&hooks.waitq, NULL);
        waitq_free(waitq);
        store_close(store);
        auth_free(auth);
        return 1;
    }
    atomic_store(&hooks.sweeper, sweeper);
    static struct app app;
    app.store = store;
    app.waitq = waitq;
    app.cfg = &cfg;
    app.auth = auth;
    struct http_server *http = http_start(&app);
    if (!http) {
        atomic_store(&hooks.sweeper, NULL);
        sweeper_stop(sweeper);
        atomic_store(&hooks.waitq, NULL);
        waitq_free(waitq);
        store_close(store);
        auth_free(auth);
        return 1;
    }
    int v6 = strchr(cfg.listen_host, ':') != NULL;
    char where[300];
    snprintf(where, sizeof where, "%s%s%s:%d", v6 ? "[" : "", cfg.listen_host, v6 ? "]" : "",
             http_port(http));
    log_info("jobqd %s listening on %s (db %s, tls %s)", JOBQ_VERSION, where, db_shown,
             cfg.tls_cert[0] ? "on" : "off");
    log_access(&cfg, auth, where);

    int sig = 0;
    rc = sigwait(&sigs, &sig);
    if (rc != 0)
        log_error("sigwait failed: %s; stopping", strerror(rc));
    else
        log_info("received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");

    http_quiesce(http);
    waitq_shutdown(waitq); /* parked long polls answer {"jobs": []} */
    if (http_drain(http, STOP_TIMEOUT_MS) > 0)
        store_abandon(store); /* store calls that outlive the timeout end now, as 503s */
    if (http_stop(http, ABANDON_WAIT_MS) != 0) {
        /* A call is stuck in the database (a disk that does not answer): its connection is
         * suspended, so neither the server nor the store can be freed. Nothing it did was
         * acknowledged; its client sees the connection close and retries. */
        log_error("exiting without closing the database");
        _exit(1);
    }
    atomic_store(&hooks.sweeper, NULL);
    sweeper_stop(sweeper);
    atomic_store(&hooks.waitq, NULL);
    waitq_free(waitq);
    store_close(store);
    auth_free(auth);
    log_info("stopped");
    return 0;
}
