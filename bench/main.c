/* jobq-bench: the load generator of bench/run.sh. One invocation runs one scenario against
 * one server and prints one result line (see run.h); bench/run.sh starts the servers and
 * calls it for every scenario and system. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: jobq-bench --system jobq|sqs|beanstalkd|watch --scenario NAME --addr HOST:PORT "
               "[options]\n"
               "scenarios: enqueue, drain, lifecycle (--rate R paces it), batch, claim, longpoll,\n"
               "           history (jobq: fill the table), hol (jobq: head of line, --saturated),\n"
               "           watch (only watch --pid); sqs: lifecycle only, against jobqd's\n"
               "           --sqs-listen (send, receive, delete in the AWS JSON protocol)\n"
               "  --addr A,B,...      several servers (jobqd processes on one database): producer\n"
               "                      and worker connections are spread round-robin over them\n"
               "  --label NAME        the system's name in the result line (default: --system)\n"
               "  --duration S        measured seconds (default 10)\n"
               "  --warmup S          seconds before the measurement starts (default 1)\n"
               "  --producers N       producer connections (default 16)\n"
               "  --workers N         worker connections (default 16)\n"
               "  --rate R            lifecycle: enqueue R jobs/s in all (default 0: full speed)\n"
               "  --batch N           batch: jobs per batch enqueue (default 100)\n"
               "  --max-jobs N        batch: max_jobs of each claim (default 10)\n"
               "  --wait S            lifecycle and batch: wait_seconds of claims (default 1)\n"
               "  --prefill N         drain, claim: jobs enqueued first (default 100000)\n"
               "  --prefill-only      only fill, then exit;  --no-prefill: skip the fill\n"
               "  --finished N        history: succeeded jobs to leave (default 1000000)\n"
               "  --delayed N         history: delayed jobs to leave (default 100000)\n"
               "  --saturated N       hol: queued jobs of a saturated key (max_running 1, one\n"
               "                      running) ahead of the --prefill free ones (default\n"
               "                      100000; 0: none, the unlimited reference)\n"
               "  --timeout S         bound of a fill phase in seconds (default 900)\n"
               "  --pid PID[,PID...]  watch these servers' memory (the largest of them) and CPU\n"
               "                      (their sum) during the window\n"
               "  --children          also watch the children of --pid (PostgreSQL)\n"
               "  --db-pid PID        also watch the database behind the servers: this\n"
               "                      postmaster and its children (db_cpu_pct, db_mem_mb)\n"
               "  --token T           send Authorization: Bearer T (jobq)\n"
               "  --queue NAME        jobq queue (default bench)\n"
               "  --backlog N         full-speed lifecycle and batch: producers wait while N jobs\n"
               "                      are enqueued and not completed (default 0: 4 x workers x\n"
               "                      jobs per claim, at least 2 batches; -1: no bound)\n");
}

/* One HOST:PORT of n bytes at s into a. Returns 0 or -1. */
static int parse_addr(const char *s, size_t n, struct addr *a)
{
    const char *colon = memrchr(s, ':', n);
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof a->host)
        return -1;
    memcpy(a->host, s, (size_t)(colon - s));
    a->host[colon - s] = '\0';
    char digits[8];
    size_t dl = n - (size_t)(colon + 1 - s);
    if (dl == 0 || dl >= sizeof digits)
        return -1;
    memcpy(digits, colon + 1, dl);
    digits[dl] = '\0';
    char *end;
    long port = strtol(digits, &end, 10);
    if (*end || port < 1 || port > 65535)
        return -1;
    a->port = (int)port;
    return 0;
}

/* --addr A,B,C into o->addrs. Returns 0 or -1. */
static int parse_addrs(const char *s, struct opts *o)
{
    for (o->naddrs = 0; o->naddrs < SERVERS_MAX; s++) {
        size_t n = strcspn(s, ",");
        if (parse_addr(s, n, &o->addrs[o->naddrs++]) != 0)
            return -1;
        s += n;
        if (*s == '\0')
            return 0;
    }
    return -1;
}

/* A number within [lo, hi], or exit 2 naming the option. */
static double num(const char *name, const char *s, double lo, double hi)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end || v < lo || v > hi) {
        fprintf(stderr, "jobq-bench: --%s wants a number from %g to %g, not \"%s\"\n", name, lo, hi,
                s);
        exit(2);
    }
    return v;
}

/* --pid P,Q,R into o->pids, or exit 2. */
static void parse_pids(const char *s, struct opts *o)
{
    char one[32];
    for (o->npids = 0; *s; o->npids++) {
        size_t n = strcspn(s, ",");
        if (o->npids == SERVERS_MAX || n >= sizeof one) {
            fprintf(stderr, "jobq-bench: --pid wants at most %d pids, comma-separated\n",
                    SERVERS_MAX);
            exit(2);
        }
        memcpy(one, s, n);
        one[n] = '\0';
        o->pids[o->npids] = (pid_t)num("pid", one, 1, 1e9);
        s += n + (s[n] == ',');
    }
}

int main(int argc, char **argv)
{
    struct opts o = {
        .system = NULL,
        .scenario = NULL,
        .duration = 10,
        .warmup = 1,
        .producers = 16,
        .workers = 16,
        .batch = 100,
        .max_jobs = 10,
        .prefill = 100000,
        .finished = 1000000,
        .delayed = 100000,
        .saturated = 100000,
        .timeout = 900,
        .wait = 1,
        .queue = "bench",
    };
    const char *addr = NULL;
    static const struct option longs[] = {
        {"system", 1, 0, 's'},    {"scenario", 1, 0, 'S'},     {"addr", 1, 0, 'a'},
        {"label", 1, 0, 'l'},     {"duration", 1, 0, 'd'},     {"warmup", 1, 0, 'W'},
        {"producers", 1, 0, 'p'}, {"workers", 1, 0, 'w'},      {"rate", 1, 0, 'r'},
        {"batch", 1, 0, 'b'},     {"max-jobs", 1, 0, 'm'},     {"wait", 1, 0, 'A'},
        {"prefill", 1, 0, 'P'},   {"prefill-only", 0, 0, 'O'}, {"no-prefill", 0, 0, 'N'},
        {"finished", 1, 0, 'f'},  {"delayed", 1, 0, 'D'},      {"timeout", 1, 0, 't'},
        {"pid", 1, 0, 'i'},       {"children", 0, 0, 'c'},     {"db-pid", 1, 0, 'g'},
        {"token", 1, 0, 'T'},     {"queue", 1, 0, 'q'},        {"backlog", 1, 0, 'B'},
        {"saturated", 1, 0, 'H'}, {"help", 0, 0, 'h'},         {0, 0, 0, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (ch) {
        case 's':
            o.system = optarg;
            break;
        case 'S':
            o.scenario = optarg;
            break;
        case 'a':
            addr = optarg;
            break;
        case 'l':
            o.label = optarg;
            break;
        case 'd':
            o.duration = num("duration", optarg, 0.05, 3600);
            break;
        case 'W':
            o.warmup = num("warmup", optarg, 0, 600);
            break;
        case 'p':
            o.producers = (int)num("producers", optarg, 1, 512);
            break;
        case 'w':
            o.workers = (int)num("workers", optarg, 1, 512);
            break;
        case 'r':
            o.rate = num("rate", optarg, 0, 1e7);
            break;
        case 'b':
            o.batch = (int)num("batch", optarg, 1, 1000);
            break;
        case 'm':
            o.max_jobs = (int)num("max-jobs", optarg, 1, 100);
            break;
        case 'A':
            o.wait = (int)num("wait", optarg, 0, 60);
            break;
        case 'P':
            o.prefill = (long)num("prefill", optarg, 0, 1e8);
            break;
        case 'O':
            o.prefill_only = 1;
            break;
        case 'N':
            o.no_prefill = 1;
            break;
        case 'f':
            o.finished = (long)num("finished", optarg, 0, 1e8);
            break;
        case 'D':
            o.delayed = (long)num("delayed", optarg, 0, 1e8);
            break;
        case 't':
            o.timeout = num("timeout", optarg, 1, 86400);
            break;
        case 'i':
            parse_pids(optarg, &o);
            break;
        case 'c':
            o.children = 1;
            break;
        case 'g':
            o.db_pid = (pid_t)num("db-pid", optarg, 1, 1e9);
            break;
        case 'T':
            o.token = optarg;
            break;
        case 'q':
            o.queue = optarg;
            break;
        case 'B':
            o.backlog = (long)num("backlog", optarg, -1, 1e8);
            break;
        case 'H':
            o.saturated = (long)num("saturated", optarg, 0, 1e8);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!o.system || !o.scenario || optind != argc) {
        usage(stderr);
        return 2;
    }
    if (!o.label)
        o.label = o.system;
    const struct driver *d = NULL;
    if (strcmp(o.system, "jobq") == 0)
        d = jobq_driver(o.scenario);
    else if (strcmp(o.system, "beanstalkd") == 0)
        d = beanstalkd_driver(o.scenario);
    else if (strcmp(o.system, "sqs") == 0)
        d = sqs_driver(o.scenario);
    if (strcmp(o.scenario, "watch") != 0 && !d) {
        fprintf(stderr, "jobq-bench: system %s has no scenario %s\n", o.system, o.scenario);
        return 2;
    }
    if (d && (!addr || parse_addrs(addr, &o) != 0)) {
        fprintf(stderr,
                "jobq-bench: --addr HOST:PORT[,HOST:PORT...] (IPv4 addresses, at most "
                "%d) is required\n",
                SERVERS_MAX);
        return 2;
    }
    if (strlen(o.queue) > 128 || (o.token && strlen(o.token) > 256)) {
        fprintf(stderr, "jobq-bench: --queue or --token too long\n");
        return 2;
    }
    return run_scenario(&o, d);
}
