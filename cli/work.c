/* `jobq work`: options, the slot threads' claim loop, and the stop on SIGTERM/SIGINT. */
#include "work.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"

#define MAX_CAPABILITIES 32
#define CLAIM_SLACK_S 10          /* a long poll's answer may come this much after wait */
#define BACKOFF_FIRST_MS 500LL    /* after a failed claim: 0.5 s, doubling ... */
#define BACKOFF_MAX_MS 10000LL    /* ... up to 10 s */
#define MAIN_TICK_NS 100000000L   /* the main thread looks at the slots every 0.1 s */
#define EMPTY_CLAIM_MIN_MS 1000LL /* claims that come back empty: at most one a second */

extern char **environ;

static const struct opt work_opts[] = {
    {"queue", 'q', "NAME", "required: the queue to take jobs from"},
    {"concurrency", 'c', "N", "commands run at once, 1-64 (default 1)"},
    {"lease", 0, "S", "lease length in seconds, renewed every S/3 (default 30)"},
    {"wait", 0, "S", "long poll: wait up to S seconds for a job, 0-60 (default 20)"},
    {"grace", 0, "S", "after SIGTERM, let commands run S more seconds (default 10)"},
    {"max-jobs", 0, "N", "exit after claiming N jobs (default 0: never)"},
    {"max-output", 0, "BYTES", "stdout kept as the result (default 1048576)"},
    {"capability", 0, "TAG", "take jobs that require TAG (repeat for more)"},
    {"worker-id", 0, "ID", "worker id prefix (default jobq-HOST-PID)"},
    {NULL, 0, NULL, NULL},
};

void work_help(FILE *f)
{
    fprintf(f,
            "\nClaims jobs from a queue with a long poll and runs COMMAND once per job: the\n"
            "payload as JSON on its stdin; JOBQ_JOB_ID, JOBQ_ATTEMPT and JOBQ_FENCING_TOKEN in\n"
            "its environment; in a process group of its own. While it runs, the lease is\n"
            "renewed every lease/3 seconds. Exit 0: the job is completed with its stdout as the\n"
            "result (JSON when it parses, else a string; null when empty). Exit N or killed by\n"
            "signal N: the job fails with error_code exit_N or signal_N and the last 4 KiB of\n"
            "stderr as error_detail (the server retries it while attempts remain). Whatever the\n"
            "command leaves running in its group when it exits is killed. A lost lease (the job\n"
            "was cancelled, or expired) kills the group and drops the job. Network errors and\n"
            "5xx are retried with backoff; complete and fail with the same lease token, until\n"
            "the lease would have run out.\n"
            "SIGTERM or SIGINT: stop claiming at once, give running commands --grace seconds,\n"
            "kill the rest and fail their jobs with retry (error_code worker_stopped), exit 0.\n"
            "Exits 1 when the server refuses the claim (4xx: bad queue name, token, role).\n");
}

/* Take one job from the --max-jobs budget. Returns 1, or 0 when it is spent. */
static int take_budget(struct worker *w)
{
    long long left = atomic_load(&w->budget);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&w->budget, &left, left - 1)) {
            return 1;
        }
    }
    return 0;
}

struct slot {
    struct worker *w;
    int n;
    pthread_t thread;
    atomic_int done;
};

static cJSON *claim_body(const struct worker *w, int n)
{
    char id[256];
    snprintf(id, sizeof(id), "%s-%d", w->worker_id, n);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "worker_id", id);
    cJSON_AddStringToObject(body, "queue", w->queue);
    cJSON_AddNumberToObject(body, "lease_seconds", (double)w->lease);
    cJSON_AddNumberToObject(body, "wait_seconds", (double)w->wait);
    cJSON_AddNumberToObject(body, "max_jobs", 1);
    if (w->ncaps > 0) {
        cJSON *caps = cJSON_AddArrayToObject(body, "capabilities");
        for (int i = 0; i < w->ncaps; i++) {
            cJSON_AddItemToArray(caps, cJSON_CreateString(w->caps[i]));
        }
    }
    return body;
}

/* One claim. Returns 1 after running a job, 0 when there was none, -1 after a network
 * error or 5xx (back off), -2 when the worker must stop. */
static int claim_and_run(struct worker *w, struct http *h, const cJSON *body)
{
    struct http_reply r;
    long long timeout_ms = (w->wait + CLAIM_SLACK_S) * 1000;
    enum http_outcome o = http_call(h, "POST", "/claim", body, timeout_ms, w->stop_fd[0], &r);
    int rc = 0;
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(r.json, "jobs");
    if (o == HTTP_CANCELLED) {
        rc = -2;
    } else if (o == HTTP_UNREACHABLE) {
        work_log("claim failed (%s), trying again", r.error);
        rc = -1;
    } else if (r.status >= 500) {
        work_log("claim answered %ld, trying again", r.status);
        rc = -1;
    } else if (r.status != 200 || !cJSON_IsArray(jobs)) {
        const char *code = http_error_code(&r), *msg = http_error_message(&r);
        work_log("the server refused the claim (%ld): %s: %s", r.status, code ? code : "?",
                 msg ? msg : "no message");
        work_stop(w, CLI_REFUSED);
        rc = -2;
    } else if (cJSON_GetArraySize(jobs) > 0) {
        work_job(w, h, cJSON_GetArrayItem(jobs, 0));
        rc = 1;
    }
    http_reply_clear(&r);
    return rc;
}

static void *slot_main(void *arg)
{
    struct slot *s = arg;
    struct worker *w = s->w;
    struct http *h = http_new(w->url, w->token);
    cJSON *body = claim_body(w, s->n);
    long long backoff = BACKOFF_FIRST_MS;
    if (h == NULL || body == NULL) {
        work_log("out of memory");
        work_stop(w, CLI_UNREACHABLE);
    }
    while (h != NULL && body != NULL && !atomic_load(&w->stopping) && take_budget(w)) {
        long long started = work_now_ms();
        int rc = claim_and_run(w, h, body);
        if (rc <= 0) {
            atomic_fetch_add(&w->budget, 1); /* no job taken: give it back */
        }
        if (rc == -2) {
            break;
        }
        if (rc == 0) { /* --wait 0, or a server answering parked polls as it stops */
            work_sleep(w, started + EMPTY_CLAIM_MIN_MS - work_now_ms());
        } else if (rc == -1) {
            work_sleep(w, backoff);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        } else {
            backoff = BACKOFF_FIRST_MS;
        }
    }
    cJSON_Delete(body);
    http_free(h);
    atomic_store(&s->done, 1);
    return NULL;
}

/* environ without the variables work_job() sets, or NULL when out of memory. The strings
 * are borrowed from environ; the caller frees the array. */
static char **base_env(void)
{
    static const char *const ours[] = {
        "JOBQ_JOB_ID=", "JOBQ_ATTEMPT=", "JOBQ_FENCING_TOKEN=", "TRACEPARENT=", "TRACESTATE="};
    size_t n = 0;
    while (environ[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 1, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; env != NULL && i < n; i++) {
        int skip = 0;
        for (size_t j = 0; j < sizeof(ours) / sizeof(ours[0]); j++) {
            skip |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
        }
        if (!skip) {
            env[k++] = environ[i];
        }
    }
    return env;
}

/* Fill w from the options. Returns the concurrency, or -1 after printing a usage error. */
static int configure(struct worker *w, const struct args *a, const char **caps)
{
    static const char *who = "jobq work";
    long long concurrency = 1, max_jobs = 0, max_output = 1048576;
    w->lease = 30;
    w->wait = 20;
    w->grace = 10;
    w->queue = args_get(a, "queue");
    if (w->queue == NULL || a->nrest == 0 || a->npos != 0) {
        fprintf(stderr,
                "%s: usage: jobq work --queue NAME [options] -- COMMAND [ARGS...] "
                "(see jobq work --help)\n",
                who);
        return -1;
    }
    if (args_int(a, "concurrency", 1, WORK_MAX_CONCURRENCY, &concurrency, who) != 0 ||
        args_int(a, "lease", 1, 86400, &w->lease, who) != 0 ||
        args_int(a, "wait", 0, 60, &w->wait, who) != 0 ||
        args_int(a, "grace", 0, 86400, &w->grace, who) != 0 ||
        args_int(a, "max-jobs", 0, LLONG_MAX, &max_jobs, who) != 0 ||
        args_int(a, "max-output", 0, HTTP_MAX_ANSWER, &max_output, who) != 0) {
        return -1;
    }
    w->ncaps = args_all(a, "capability", caps, MAX_CAPABILITIES);
    if (w->ncaps > MAX_CAPABILITIES) {
        fprintf(stderr, "%s: at most %d --capability tags\n", who, MAX_CAPABILITIES);
        return -1;
    }
    w->caps = caps;
    w->argv = a->rest;
    w->max_output = (size_t)max_output;
    atomic_store(&w->budget, max_jobs > 0 ? max_jobs : LLONG_MAX);
    return (int)concurrency;
}

/* Wait for the slots to end, starting the stop on SIGTERM or SIGINT (blocked in every
 * thread, taken here with sigtimedwait). */
static void supervise(struct worker *w, struct slot *slots, int n, const sigset_t *sigs)
{
    for (;;) {
        int live = 0;
        for (int i = 0; i < n; i++) {
            live += !atomic_load(&slots[i].done);
        }
        if (live == 0) {
            return;
        }
        struct timespec tick = {0, MAIN_TICK_NS};
        int sig = sigtimedwait(sigs, NULL, &tick);
        if ((sig == SIGTERM || sig == SIGINT) && !atomic_load(&w->stopping)) {
            work_log("%s: no more claims; running commands have %llds", strsignal(sig), w->grace);
            work_stop(w, 0);
        }
    }
}

static int run_work(struct cli *c, const struct args *a)
{
    struct worker w = {.url = c->url, .token = c->token, .stop_fd = {-1, -1}};
    const char *caps[MAX_CAPABILITIES + 1];
    int n = configure(&w, a, caps);
    if (n < 0) {
        return CLI_USAGE;
    }
    char host[128] = "host", id[256];
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(id, sizeof(id), "jobq-%s-%ld", host, (long)getpid());
    w.worker_id = args_get(a, "worker-id") ? args_get(a, "worker-id") : id;
    w.env = base_env();
    struct slot *slots = calloc((size_t)n, sizeof(*slots));
    if (w.env == NULL || slots == NULL || pipe2(w.stop_fd, O_CLOEXEC) != 0) {
        fprintf(stderr, "jobq work: cannot start: %s\n", strerror(errno ? errno : ENOMEM));
        free(w.env);
        free(slots);
        return CLI_UNREACHABLE;
    }
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, &old); /* the slots inherit it */
    int started = 0;
    for (; started < n; started++) {
        slots[started].w = &w;
        slots[started].n = started + 1;
        if (pthread_create(&slots[started].thread, NULL, slot_main, &slots[started]) != 0) {
            work_log("cannot start slot %d: stopping", started + 1);
            work_stop(&w, CLI_UNREACHABLE);
            break;
        }
    }
    work_log("taking jobs from %s at %s, %d at a time", w.queue, w.url, started);
    supervise(&w, slots, started, &sigs);
    for (int i = 0; i < started; i++) {
        pthread_join(slots[i].thread, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(w.stop_fd[0]);
    close(w.stop_fd[1]);
    free(slots);
    free(w.env);
    return atomic_load(&w.exit_code);
}

const struct command cmd_work = {"work", "--queue NAME [options] -- COMMAND [ARGS...]",
                                 "run COMMAND for each job of a queue: a worker", work_opts,
                                 run_work};
