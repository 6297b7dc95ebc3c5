/* One scenario run: prepare, start the threads, watch the server during the window, stop,
 * merge, and print the result line. */
#include "run.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "procstat.h"

#define ERRORS_PRINTED_MAX 5

_Static_assert(SERVERS_MAX <= PROCWATCH_ROOTS, "every --pid fits in a procwatch");

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_until(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

int run_over(const struct run *r)
{
    return atomic_load(&r->abort) || now_ns() >= r->t_end;
}

void count_op(struct tstate *ts, int64_t done, int64_t lat_ns)
{
    if (done < ts->r->t_begin || done >= ts->r->t_end)
        return;
    ts->ops++;
    ts->last_ns = done;
    hist_record(ts->lat, lat_ns);
}

void count_error(struct tstate *ts, const char *fmt, ...)
{
    ts->errors++;
    if (atomic_fetch_add(&ts->r->errors_printed, 1) >= ERRORS_PRINTED_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "jobq-bench: %s %s: ", ts->r->o->label, ts->r->o->scenario);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void *run_fail(struct run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "jobq-bench: %s %s: ", r->o->label, r->o->scenario);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_store(&r->abort, 1);
    return NULL;
}

void *produce_jobs(struct tstate *ts, int (*send)(struct tstate *ts, int64_t t))
{
    const struct opts *o = ts->r->o;
    int only_enqueue = strcmp(o->scenario, "enqueue") == 0;
    for (int64_t k = 0; !run_over(ts->r); k++) {
        int64_t t = now_ns();
        if (o->rate > 0) {
            t = ts->r->t_start + (int64_t)((double)(k * o->producers + ts->idx) * 1e9 / o->rate);
            sleep_until(t);
            if (run_over(ts->r))
                break;
        }
        backlog_take(ts->r, 1);
        if (send(ts, t) != 0)
            backlog_give(ts->r, 1);
        else if (only_enqueue)
            count_op(ts, now_ns(), now_ns() - t);
    }
    return NULL;
}

void *lp_produce(struct tstate *ts, int (*send)(struct tstate *ts, int64_t t))
{
    struct run *r = ts->r;
    int n = r->o->naddrs;
    struct conn cs[SERVERS_MAX]; /* one per server when there are several */
    if (n > 1 && open_conns(r, cs, n, ts->c.timeout_ms) != 0)
        return NULL;
    for (int k = 0; !run_over(r); k++) {
        sleep_until(now_ns() + (1 + rand_r(&ts->seed) % 4) * 1000000LL);
        uint64_t before = lp_answered(r);
        /* send() speaks on ts->c: lend it the next server's connection for this job */
        struct conn own = ts->c;
        if (n > 1)
            ts->c = cs[k % n];
        int rc = send(ts, now_ns());
        if (n > 1) {
            cs[k % n] = ts->c;
            ts->c = own;
        }
        if (rc != 0)
            continue;
        if (lp_wait_answered(r, before, 10) != 0)
            count_error(ts, "no parked worker took a job within 10 s");
    }
    if (n > 1)
        free_conns(cs, n);
    return NULL;
}

void backlog_take(struct run *r, long n)
{
    if (r->cap <= 0)
        return;
    pthread_mutex_lock(&r->mu);
    while (r->inflight > 0 && r->inflight + n > r->cap && !run_over(r)) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 50 * 1000000;
        if (dl.tv_nsec >= 1000000000) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&r->cond, &r->mu, &dl);
    }
    r->inflight += n;
    if (r->inflight < r->cap)
        pthread_cond_signal(&r->cond); /* room for another waiting producer */
    pthread_mutex_unlock(&r->mu);
}

void backlog_give(struct run *r, long n)
{
    if (r->cap <= 0)
        return;
    pthread_mutex_lock(&r->mu);
    r->inflight -= n;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

uint64_t lp_answered(struct run *r)
{
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->answered;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void lp_answer(struct run *r)
{
    pthread_mutex_lock(&r->mu);
    r->answered++;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

int lp_wait_answered(struct run *r, uint64_t before, int seconds)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += seconds;
    pthread_mutex_lock(&r->mu);
    int rc = 0;
    while (r->answered == before && rc == 0)
        rc = pthread_cond_timedwait(&r->cond, &r->mu, &dl);
    pthread_mutex_unlock(&r->mu);
    return rc == 0 ? 0 : -1;
}

int conn_init_nth(struct conn *c, const struct opts *o, int i, int timeout_ms)
{
    const struct addr *a = &o->addrs[i % o->naddrs];
    return conn_init(c, a->host, a->port, timeout_ms, o->token);
}

int open_conns(struct run *r, struct conn *cs, int n, int timeout_ms)
{
    for (int i = 0; i < n; i++) {
        if (conn_init_nth(&cs[i], r->o, i, timeout_ms) != 0) {
            free_conns(cs, i + 1);
            run_fail(r, "out of memory");
            return -1;
        }
    }
    return 0;
}

void free_conns(struct conn *cs, int n)
{
    for (int i = 0; i < n; i++)
        conn_free(&cs[i]);
}

struct thread_arg {
    struct tstate *ts;
    void *(*body)(void *);
    atomic_int *alive;
};

static void *thread_main(void *arg)
{
    struct thread_arg *a = arg;
    a->body(a->ts);
    atomic_fetch_sub(a->alive, 1);
    return NULL;
}

/* Which threads a scenario runs. */
static void roles(const struct opts *o, int *np, int *nw)
{
    const char *s = o->scenario;
    *np = o->producers;
    *nw = o->workers;
    if (strcmp(s, "enqueue") == 0)
        *nw = 0;
    else if (strcmp(s, "drain") == 0 || strcmp(s, "claim") == 0 || strcmp(s, "hol") == 0)
        *np = 0;
    else if (strcmp(s, "longpoll") == 0)
        *np = 1;
    else if (strcmp(s, "watch") == 0 || strcmp(s, "history") == 0)
        *np = *nw = 0;
}

static void print_result(const struct run *r, const struct hist *h, uint64_t ops, uint64_t errors,
                         double window, const struct procwatch *w, const struct procwatch *dbw,
                         double gen_cpu)
{
    const struct opts *o = r->o;
    double jobs_s = window > 0 ? (double)ops / window : 0;
    printf("result\tscenario=%s\tsystem=%s\tjobs_s=%.1f\tp50_ms=%.3f\tp99_ms=%.3f"
           "\tp999_ms=%.3f\tmax_ms=%.3f\tcount=%llu\terrors=%llu\twindow_s=%.3f"
           "\tprefill_s=%.3f\tprefilled=%ld\tbacklog=%ld",
           o->scenario, o->label, jobs_s, hist_quantile_ns(h, 0.50) / 1e6,
           hist_quantile_ns(h, 0.99) / 1e6, hist_quantile_ns(h, 0.999) / 1e6,
           (double)h->max_ns / 1e6, (unsigned long long)ops, (unsigned long long)errors, window,
           r->prefill_s, r->prefilled, r->cap);
    if (w && w->npids > 0 && w->wall_s > 0)
        printf("\trss_peak_mb=%.1f\trss_hwm_mb=%.1f\tcpu_pct=%.1f\tcpu_us_per_job=%.1f",
               (double)w->peak_rss_kb / 1024, (double)w->hwm_kb / 1024, 100 * w->cpu_s / w->wall_s,
               ops ? 1e6 * w->cpu_s / (double)ops : 0);
    if (dbw && dbw->npids > 0 && dbw->wall_s > 0)
        printf("\tdb_mem_mb=%.1f\tdb_cpu_pct=%.1f", (double)dbw->peak_rss_kb / 1024,
               100 * dbw->cpu_s / dbw->wall_s);
    if (window > 0)
        printf("\tgen_cpu_pct=%.1f", 100 * gen_cpu / window);
    printf("%s\n", r->extra);
    fflush(stdout);
}

int run_scenario(const struct opts *o, const struct driver *d)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cond, NULL);
    struct hist *total = calloc(1, sizeof *total);
    if (!total) {
        fprintf(stderr, "jobq-bench: out of memory\n");
        return 1;
    }
    int64_t t0 = now_ns();
    if (d && d->prepare && d->prepare(&r) != 0) {
        free(total);
        return 1;
    }
    r.prefill_s = (double)(now_ns() - t0) / 1e9;
    if (o->prefill_only || strcmp(o->scenario, "history") == 0) {
        print_result(&r, total, 0, 0, 0, NULL, NULL, 0);
        free(total);
        return 0;
    }

    int np, nw;
    roles(o, &np, &nw);
    int n = np + nw;
    struct tstate *ts = calloc((size_t)(n ? n : 1), sizeof *ts);
    struct thread_arg *args = calloc((size_t)(n ? n : 1), sizeof *args);
    atomic_int alive_workers = nw, alive_producers = np;
    int long_wait = strcmp(o->scenario, "longpoll") == 0 ? 40 : o->wait;
    int timeout_ms = (long_wait + 30) * 1000;
    int bounded = (strcmp(o->scenario, "lifecycle") == 0 || strcmp(o->scenario, "batch") == 0) &&
                  o->rate <= 0;
    if (bounded && o->backlog == 0) {
        long per_claim = strcmp(o->scenario, "batch") == 0 ? o->max_jobs : 1;
        r.cap = 4L * o->workers * per_claim;
        if (strcmp(o->scenario, "batch") == 0 && r.cap < 2L * o->batch)
            r.cap = 2L * o->batch;
    } else if (bounded && o->backlog > 0) {
        r.cap = o->backlog;
    }
    r.t_start = now_ns();
    r.t_begin = r.t_start + (int64_t)(o->warmup * 1e9);
    r.t_end = r.t_begin + (int64_t)(o->duration * 1e9);
    int started = 0, failed = !ts || !args;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int i = 0; !failed && i < n; i++) {
        struct tstate *t = &ts[i];
        t->r = &r;
        t->role = i < np ? 0 : 1;
        t->idx = i < np ? i : i - np;
        t->seed = (unsigned)(i * 7919 + 17);
        t->lat = calloc(1, sizeof *t->lat);
        if (!t->lat || conn_init_nth(&t->c, o, t->idx, timeout_ms) != 0) {
            fprintf(stderr, "jobq-bench: out of memory\n");
            failed = 1;
            break;
        }
        args[i].ts = t;
        args[i].body = t->role == 0 ? d->producer : d->worker;
        args[i].alive = t->role == 0 ? &alive_producers : &alive_workers;
        if (pthread_create(&t->thread, &attr, thread_main, &args[i]) != 0) {
            fprintf(stderr, "jobq-bench: cannot start thread %d\n", i);
            failed = 1;
            break;
        }
        started++;
    }
    pthread_attr_destroy(&attr);
    if (failed)
        atomic_store(&r.abort, 1);

    sleep_until(r.t_begin);
    struct procwatch w, dbw;
    if (procwatch_start(&w, o->pids, o->npids, o->children, 100) != 0)
        fprintf(stderr, "jobq-bench: cannot read /proc of --pid: not watching it\n");
    if (procwatch_start(&dbw, &o->db_pid, o->db_pid > 0, 1, 100) != 0)
        fprintf(stderr, "jobq-bench: cannot read /proc of --db-pid: not watching it\n");
    double cpu0 = self_cpu_s();
    /* Wait for the end of the window; a drain ends early when every worker found the queue
     * empty; a run without threads (watch) just waits. */
    while (!run_over(&r)) {
        if (n > 0 && atomic_load(&alive_workers) == 0 && atomic_load(&alive_producers) == 0)
            break;
        if (nw > 0 && np == 0 && atomic_load(&alive_workers) == 0)
            break;
        sleep_until(now_ns() + 20 * 1000000);
    }
    int64_t t_stop = now_ns();
    procwatch_stop(&w);
    procwatch_stop(&dbw);
    double gen_cpu = self_cpu_s() - cpu0;
    if (d && d->finish)
        d->finish(&r);
    for (int i = 0; i < started; i++)
        pthread_join(ts[i].thread, NULL);

    uint64_t ops = 0, errors = 0;
    int64_t last = 0;
    for (int i = 0; i < n && ts; i++) {
        if (ts[i].lat)
            hist_merge(total, ts[i].lat);
        ops += ts[i].ops;
        errors += ts[i].errors;
        if (ts[i].last_ns > last)
            last = ts[i].last_ns;
        conn_free(&ts[i].c);
        free(ts[i].lat);
    }
    double window = o->duration;
    if (t_stop < r.t_end) /* ended early (drained): up to the last counted operation */
        window = last > r.t_begin ? (double)(last - r.t_begin) / 1e9 : 0;
    print_result(&r, total, ops, errors, window, &w, &dbw, gen_cpu);
    int aborted = atomic_load(&r.abort);
    free(ts);
    free(args);
    free(total);
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cond);
    return aborted ? 1 : 0;
}
