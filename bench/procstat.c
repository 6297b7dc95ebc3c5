#include "procstat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Parent pid and utime+stime ticks of pid. Returns 0 or -1. */
static int read_stat(pid_t pid, pid_t *ppid, uint64_t *ticks)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p)
        return -1;
    /* after ")": state(3) ppid(4) ... utime(14) stime(15) */
    char state;
    int pp;
    unsigned long long ut, st;
    if (sscanf(p + 2, "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &pp, &ut,
               &st) != 4)
        return -1;
    *ppid = pp;
    *ticks = ut + st;
    return 0;
}

static long read_status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Proportional set size of pid in kB (its share of pages it shares with others), or -1. */
static long read_pss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Pss:", 4) == 0) {
            v = strtol(line + 4, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* The memory of one process: VmRSS, or its PSS when a whole process tree is watched (the
 * processes of PostgreSQL share their buffers: summing RSS would count them many times). */
static long memory_kb(const struct procwatch *w, pid_t pid)
{
    long v = w->children ? read_pss_kb(pid) : -1;
    return v >= 0 ? v : read_status_kb(pid, "VmRSS");
}

static void note(struct procwatch *w, pid_t pid, uint64_t ticks, int first_sample)
{
    for (int i = 0; i < w->nprocs; i++) {
        if (w->procs[i].pid == pid) {
            w->procs[i].last = ticks;
            return;
        }
    }
    if (w->nprocs == PROCWATCH_MAX)
        return;
    w->procs[w->nprocs].pid = pid;
    w->procs[w->nprocs].first = first_sample ? ticks : 0;
    w->procs[w->nprocs].last = ticks;
    w->nprocs++;
}

static int is_root(const struct procwatch *w, pid_t pid)
{
    for (int i = 0; i < w->npids; i++)
        if (w->pids[i] == pid)
            return 1;
    return 0;
}

static void sample(struct procwatch *w, int first_sample)
{
    pid_t pp;
    uint64_t ticks;
    long rss = 0; /* with children: the sum over the tree */
    for (int i = 0; i < w->npids; i++) {
        if (read_stat(w->pids[i], &pp, &ticks) != 0)
            continue;
        note(w, w->pids[i], ticks, first_sample);
        long r = memory_kb(w, w->pids[i]);
        if (w->children)
            rss += r > 0 ? r : 0;
        else if (r > w->peak_rss_kb)
            w->peak_rss_kb = r;
    }
    if (w->children) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            if (*end != '\0' || pid <= 0 || is_root(w, (pid_t)pid))
                continue;
            if (read_stat((pid_t)pid, &pp, &ticks) != 0 || !is_root(w, pp))
                continue;
            note(w, (pid_t)pid, ticks, first_sample);
            long r = memory_kb(w, (pid_t)pid);
            rss += r > 0 ? r : 0;
        }
        if (d)
            closedir(d);
    }
    if (rss > w->peak_rss_kb)
        w->peak_rss_kb = rss;
}

static void *watch_main(void *arg)
{
    struct procwatch *w = arg;
    while (!atomic_load(&w->stop)) {
        struct timespec ts = {w->interval_ms / 1000, (long)(w->interval_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        if (!atomic_load(&w->stop))
            sample(w, 0);
    }
    return NULL;
}

int procwatch_start(struct procwatch *w, const pid_t *pids, int n, int children, int interval_ms)
{
    memset(w, 0, sizeof *w);
    w->children = children;
    w->interval_ms = interval_ms > 0 ? interval_ms : 100;
    pid_t pp;
    uint64_t ticks;
    for (int i = 0; i < n && i < PROCWATCH_ROOTS; i++) {
        if (pids[i] <= 0 || read_stat(pids[i], &pp, &ticks) != 0) {
            w->npids = 0;
            return -1;
        }
        w->pids[w->npids++] = pids[i];
    }
    if (w->npids == 0)
        return 0;
    w->t0_ns = mono_ns();
    sample(w, 1);
    atomic_store(&w->stop, 0);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0)
        return -1;
    w->running = 1;
    return 0;
}

void procwatch_stop(struct procwatch *w)
{
    if (!w->running)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    w->running = 0;
    sample(w, 0);
    w->wall_s = (double)(mono_ns() - w->t0_ns) / 1e9;
    uint64_t ticks = 0;
    for (int i = 0; i < w->nprocs; i++)
        ticks += w->procs[i].last - w->procs[i].first;
    w->cpu_s = (double)ticks / (double)sysconf(_SC_CLK_TCK);
    for (int i = 0; i < w->npids; i++) {
        long hwm = read_status_kb(w->pids[i], "VmHWM");
        if (hwm > w->hwm_kb)
            w->hwm_kb = hwm;
    }
}

double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
