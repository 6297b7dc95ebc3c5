/* The load generator's shared parts: options, one scenario run, per-thread state, and the
 * two drivers (jobq over HTTP, beanstalkd over its text protocol).
 *
 * A run starts its producer and worker threads at t_start, counts only what completes inside
 * the measurement window [t_begin, t_end) (after the warm-up), and stops every thread soon
 * after t_end. Each thread owns one connection and its own histogram; the run merges them. */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "conn.h"
#include "hist.h"

struct opts {
    const char *system;   /* jobq | beanstalkd | watch */
    const char *label;    /* the system's name in the result line, e.g. jobq-full */
    const char *scenario; /* enqueue | drain | lifecycle | batch | claim | longpoll | history |
                             watch */
    char host[64];
    int port;
    double duration, warmup; /* seconds */
    int producers, workers;
    double rate;  /* paced lifecycle: jobs/s over all producers; 0: full speed */
    int batch;    /* jobs per batch enqueue (batch scenario) */
    int max_jobs; /* claim max_jobs (batch scenario) */
    long prefill; /* jobs enqueued before drain and claim */
    int prefill_only, no_prefill;
    long finished;  /* history: finished jobs to leave in the table */
    long delayed;   /* history: delayed jobs to leave in the table */
    double timeout; /* bound of a prefill or history phase, seconds */
    int wait;       /* wait_seconds of lifecycle claims */
    long backlog;   /* full-speed lifecycle and batch: jobs enqueued and not yet completed at
                       most (producers wait); 0: 4 x workers x jobs per claim, at least 2
                       batches; -1: unbounded */
    pid_t pid;      /* server to watch (0: none) */
    int children;   /* watch pid's children too */
    const char *token;
    const char *queue;
};

struct run;

/* One producer or worker thread. */
struct tstate {
    struct run *r;
    int idx;  /* among the threads of its role */
    int role; /* 0 producer, 1 worker */
    pthread_t thread;
    struct conn c;
    struct hist *lat;
    uint64_t ops, errors;
    int64_t last_ns; /* when the last counted op completed */
    unsigned seed;
};

struct run {
    const struct opts *o;
    int64_t t_start, t_begin, t_end; /* monotonic ns */
    atomic_int abort;                /* a thread met a fatal error: everyone stops */
    atomic_int errors_printed;
    atomic_int drained; /* a drain or claim worker found the queue empty */
    /* long poll: the producer waits for the answer to each job before the next */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint64_t answered;
    long cap;         /* backlog bound of this run (0: none) */
    long inflight;    /* enqueued and not yet completed, under mu */
    double prefill_s; /* how long the preparation took */
    long prefilled;   /* jobs it left in the table */
};

/* A driver: prepare (prefill) before the threads start, and the two thread bodies. */
struct driver {
    int (*prepare)(struct run *r); /* returns 0, or -1 after printing why */
    void *(*producer)(void *ts);
    void *(*worker)(void *ts);
    int (*finish)(struct run *r); /* after the window (long poll: wake the parked); may be NULL */
};

/* The drivers of each system for a scenario, or NULL when the system has no such scenario. */
const struct driver *jobq_driver(const char *scenario);
const struct driver *beanstalkd_driver(const char *scenario);

/* Monotonic time in nanoseconds. This function can't fail. */
int64_t now_ns(void);

/* Sleep until the monotonic time t (ns). This function can't fail. */
void sleep_until(int64_t t);

/* Whether a thread should stop: past the window's end, or the run aborted. */
int run_over(const struct run *r);

/* Count one operation of ts completed at done (ns), with latency lat_ns, when done lies in the
 * window. This function can't fail. */
void count_op(struct tstate *ts, int64_t done, int64_t lat_ns);

/* Count an error of ts and print the first few (fmt is printf-like). */
void count_error(struct tstate *ts, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print a fatal error and make every thread stop. Returns NULL (for thread bodies). */
void *run_fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The body of a one-job-per-request producer thread: send(ts, t) sends one job stamped t (ns)
 * and returns 0 once the server took it, else -1 (counted by send). At full speed or paced
 * (opts.rate over all producers), under the backlog bound; in the enqueue scenario each job
 * taken is counted with its latency. Returns NULL. */
void *produce_jobs(struct tstate *ts, int (*send)(struct tstate *ts, int64_t t));

/* Producers: wait until n more jobs fit under the run's backlog bound (or the run is over),
 * and take them. Workers: give back n completed jobs. No-ops when the run has no bound. */
void backlog_take(struct run *r, long n);
void backlog_give(struct run *r, long n);

/* Long poll: the count of jobs that parked workers answered so far; lp_answer() counts one
 * more and wakes the producer; lp_wait_answered() waits up to `seconds` for the count to pass
 * `before` and returns 0, or -1 on timeout. */
uint64_t lp_answered(struct run *r);
void lp_answer(struct run *r);
int lp_wait_answered(struct run *r, uint64_t before, int seconds);

/* The long-poll producer's body: send(ts, t) one job (as for produce_jobs), wait until a parked
 * worker took it (an error after 10 s), pause 1-5 ms, and again. Returns NULL. */
void *lp_produce(struct tstate *ts, int (*send)(struct tstate *ts, int64_t t));

/* Open n connections to the server of r, each with the given receive timeout, into cs[].
 * Returns 0, or -1 after printing why (the ones opened are freed). */
int open_conns(struct run *r, struct conn *cs, int n, int timeout_ms);
void free_conns(struct conn *cs, int n);

#endif
