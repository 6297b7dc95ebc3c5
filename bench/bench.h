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

#define SERVERS_MAX 16 /* --addr and --pid entries at most (several jobqd on one database) */

/* One server address of --addr. */
struct addr {
    char host[64];
    int port;
};

struct opts {
    const char *system;   /* jobq | sqs | beanstalkd | watch */
    const char *label;    /* the system's name in the result line, e.g. jobq-full */
    const char *scenario; /* enqueue | drain | lifecycle | batch | claim | longpoll | history |
                             hol | watch */
    struct addr addrs[SERVERS_MAX]; /* connections spread round-robin over them */
    int naddrs;
    double duration, warmup; /* seconds */
    int producers, workers;
    double rate;  /* paced lifecycle: jobs/s over all producers; 0: full speed */
    int batch;    /* jobs per batch enqueue (batch scenario) */
    int max_jobs; /* claim max_jobs (batch scenario) */
    long prefill; /* jobs enqueued before drain and claim */
    int prefill_only, no_prefill;
    long finished;  /* history: finished jobs to leave in the table */
    long delayed;   /* history: delayed jobs to leave in the table */
    long saturated; /* hol: queued jobs of the saturated key ahead of the free ones (0: none) */
    double timeout; /* bound of a prefill or history phase, seconds */
    int wait;       /* wait_seconds of lifecycle claims */
    long backlog;   /* full-speed lifecycle and batch: jobs enqueued and not yet completed at
                       most (producers wait); 0: 4 x workers x jobs per claim, at least 2
                       batches; -1: unbounded */
    pid_t pids[SERVERS_MAX]; /* server processes to watch */
    int npids;               /* 0: none */
    int children;            /* watch the children of pids too */
    pid_t db_pid; /* a PostgreSQL postmaster behind the servers, watched with its children */
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
    char extra[256];  /* more result fields ("\tname=value..."), set by the preparation */
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
const struct driver *sqs_driver(const char *scenario); /* jobq's SQS listener (sqs.c) */

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
 * worker took it (an error after 10 s), pause 1-5 ms, and again; with several servers each job
 * goes to the next one in turn (the workers are parked on all of them). Returns NULL. */
void *lp_produce(struct tstate *ts, int (*send)(struct tstate *ts, int64_t t));

/* Prepare c for the server of --addr number i modulo their count (connections of one role are
 * spread round-robin), with the given receive timeout; nothing is connected yet. Returns 0, or
 * -1 when out of memory. */
int conn_init_nth(struct conn *c, const struct opts *o, int i, int timeout_ms);

/* Open n connections, cs[i] to the server numbered i (round-robin, see conn_init_nth), each
 * with the given receive timeout. Returns 0, or -1 after printing why (the ones opened are
 * freed). */
int open_conns(struct run *r, struct conn *cs, int n, int timeout_ms);
void free_conns(struct conn *cs, int n);

#endif
