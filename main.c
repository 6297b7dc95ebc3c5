/* jobqd: read the configuration, start the process's parts (api/daemon.c), wait for SIGTERM
 * or SIGINT, stop them; or run a subcommand (jobqd migrate). Everything else lives in the
 * library. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "migrate.h"

#ifndef JOBQ_VERSION
#define JOBQ_VERSION "dev"
#endif

/* How long a graceful stop waits for requests in flight. */
#define STOP_TIMEOUT_MS 10000

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

    struct daemon *d = daemon_start(&cfg);
    if (!d)
        return 1;
    int sig = 0;
    rc = sigwait(&sigs, &sig);
    if (rc != 0)
        log_error("sigwait failed: %s; stopping", strerror(rc));
    else
        log_info("received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = daemon_stop(d, STOP_TIMEOUT_MS);
    log_info("stopped");
    return rc;
}
