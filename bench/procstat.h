/* Watch server processes (and, for PostgreSQL, the children of its postmaster) while a
 * scenario runs: peak resident memory sampled from /proc/PID/status (the sum of
 * /proc/PID/smaps_rollup's Pss over a process tree), and CPU time (utime + stime from
 * /proc/PID/stat) used between procwatch_start() and procwatch_stop(). Several processes
 * (jobqd processes sharing one database) are watched each on its own: the memory reported is
 * the largest of any one of them, the CPU their sum. */
#ifndef BENCH_PROCSTAT_H
#define BENCH_PROCSTAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCWATCH_MAX 512  /* processes followed at most (the parents and their children) */
#define PROCWATCH_ROOTS 16 /* processes named to procwatch_start() at most */

struct procwatch {
    pid_t pids[PROCWATCH_ROOTS];
    int npids;
    int children;    /* also count every process whose parent is one of pids */
    int interval_ms; /* between samples */
    pthread_t thread;
    atomic_int stop;
    int running;
    /* results, valid after procwatch_stop() */
    long peak_rss_kb; /* the largest VmRSS of one of pids seen in one sample; with children,
                         the largest sum of the tree's PSS (shared pages split between the
                         processes) */
    long hwm_kb;      /* the largest VmHWM of pids at the stop: a peak since it started */
    double cpu_s;     /* CPU seconds used by all the processes during the watch */
    double wall_s;    /* how long the watch lasted */
    /* per-process CPU ticks: first seen (0 if born during the watch) and last seen */
    int nprocs;
    struct {
        pid_t pid;
        uint64_t first, last;
    } procs[PROCWATCH_MAX];
    int64_t t0_ns;
};

/* Take the first sample of pids[0..n) (at most PROCWATCH_ROOTS; borrowed) and start a thread
 * that samples every interval_ms. Returns 0, or -1 when a /proc/PID cannot be read (n 0 means:
 * watch nothing, and returns 0). */
int procwatch_start(struct procwatch *w, const pid_t *pids, int n, int children, int interval_ms);

/* Take the last sample, stop the thread and fill in the results. Safe on a watch that never
 * started. This function can't fail. */
void procwatch_stop(struct procwatch *w);

/* CPU seconds (utime + stime) this process has used so far. This function can't fail. */
double self_cpu_s(void);

#endif
