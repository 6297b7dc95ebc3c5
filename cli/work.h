/* `jobq work`: turns a command into a worker. Slot threads claim jobs with a long poll and
 * run the command once per job (work_job.c); the main thread waits for SIGTERM/SIGINT and
 * for the slots to end (work.c). */
#ifndef JOBQ_CLI_WORK_H
#define JOBQ_CLI_WORK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "http.h"

#define WORK_MAX_CONCURRENCY 64
#define WORK_STDERR_TAIL 4096 /* bytes of a command's stderr kept for error_detail */

/* What every slot shares: the settings (read-only once the slots start) and the stop. */
struct worker {
    const char *url, *token, *queue;
    const char *worker_id; /* prefix; each slot adds "-<n>" */
    char **argv;           /* the command, NULL-terminated (borrowed from main's argv) */
    char **env;            /* environ without the JOBQ_JOB_ID/ATTEMPT/FENCING_TOKEN */
    const char **caps;     /* --capability tags */
    int ncaps;
    long long lease, wait, grace; /* seconds */
    size_t max_output;            /* bytes of stdout kept as the result */
    int stop_fd[2];               /* a byte is written to [1] once, when the stop begins:
                                     [0] then stays readable, and every wait watches it */
    atomic_int stopping;          /* 1 once the stop began */
    atomic_llong stop_ms;         /* work_now_ms() when it began */
    atomic_int exit_code;         /* what `jobq work` exits with */
    atomic_llong budget;          /* jobs still to claim (--max-jobs), or LLONG_MAX */
};

/* Milliseconds of CLOCK_MONOTONIC. This function can't fail. */
long long work_now_ms(void);

/* One line on stderr, "jobq work: " and the formatted text. */
void work_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Begin the stop (idempotent): no more claims, a claim in progress is abandoned, running
 * commands get --grace seconds. exit_code replaces the exit code when not 0.
 * Async-signal-safe when exit_code is 0. */
void work_stop(struct worker *w, int exit_code);

/* Wait ms milliseconds, or less when the stop begins. Returns 1 when it began, else 0. */
int work_sleep(struct worker *w, long long ms);

/* Run one claimed job (borrowed) to its end with client h: the command with the payload on
 * stdin, heartbeats while it runs, then complete or fail with the lease token (retried
 * through network errors and 5xx until the lease would have expired); a lost lease or the
 * end of --grace kills the command's process group. Logs what happened. */
void work_job(struct worker *w, struct http *h, const cJSON *job);

/* The part of `jobq work --help` that explains what it does. */
void work_help(FILE *f);

#endif
