/* The PostgreSQL implementation of struct store: its handle, its connections, its
 * transaction runner and the operations that pg_store.c puts in its ops table. Any number of
 * jobqd processes share one database:
 * - every write is one short transaction on a pooled connection, run by one of the store's
 *   writer threads (store_submit; as many transactions in flight as the load needs, up to
 *   --pg-writers: pg_exec.c) or by the sweeper's thread; calls queued together share one
 *   transaction (group commit: one pipeline and one WAL flush for all of them), and calls
 *   of one kind there share one set-based statement; claims pick their rows with
 *   FOR UPDATE SKIP LOCKED, and every lease operation re-checks token, status and deadline in
 *   the statement that changes the row (or locks the row first);
 * - `now` follows the database's clock: the caller's now plus the skew between this host's
 *   clock and the server's, measured at every connect and every ping (pg_clock.c);
 * - a transaction that made jobs claimable sends one NOTIFY per queue; one listening
 *   connection per process turns them into on_ready hooks (pg_listen.c);
 * - one sweeper at a time: each sweep transaction starts with pg_try_advisory_xact_lock.
 * Calls flow down, file by file: pg_store.c (open, the ops table) -> pg_call.c (store_submit and
 * the kind table) -> the op files (pg_enqueue.c and pg_enqueue_deps.c over pg_insert.c, pg_claim.c
 * over pg_lanes.c, pg_lease.c, pg_admin.c, pg_queue.c, pg_limits.c, pg_schedules.c; pg_deps.c
 * walks a job's dependents) -> pg_exec.c (the executor's queue and writer threads, groups; when
 * groups overlap: server/admit.h) -> pg_pipe.c (pipelines of one-statement calls) -> pg_tx.c (one
 * transaction) -> pg_pool.c -> pg_conn.c (one connection: statements, errors, round trips). Beside
 * them: pg_clock.c (the database's clock and the round trip to it), pg_due.c (a commit's news, and
 * the due list), pg_listen.c (NOTIFY and LISTEN), pg_stats.c (the jobs table's planner
 * statistics), pg_row.c (rows into struct job), pg_arr.c (array parameters), pg_stmt.c (the
 * statement table; the SQL of some of its rows in pg_stmt_parts.h, pg_stmt_sqs.h and
 * pg_stmt_webhook.h), pg_schema.c (migrations), the reads (pg_read.c, pg_links.c,
 * pg_throughput.c), the sweep (pg_sweep.c) and jobqd migrate's target (pg_import.c). */
#ifndef JOBQ_PG_STORE_H
#define JOBQ_PG_STORE_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "admit.h"
#include "pg_stmt.h"
#include "store.h"
#include "store_events.h"
#include "store_news.h"
#include "store_schedule.h"
#include "store_sqs.h"
#include "store_webhook.h"

#define PG_TX_TRIES 3          /* a transaction run again after contention or a dead connection */
#define PG_CANCEL_WAIT_MS 5000 /* for the answer to a cancel request */

/* One connection and the statements prepared on it. */
struct pg_conn {
    PGconn *db; /* NULL when not connected */
    /* Pooled connections: what cancels db's running statement (store_abandon), and the
     * mutex that guards it (the pool's); NULL for the others. */
    PGcancel *cancel;
    pthread_mutex_t *cancel_mu;
    uint64_t prepared[(PG_STMT_COUNT + 63) / 64]; /* bit per statement prepared on db */
    int bad;                     /* it failed at the connection level: reconnect before use */
    atomic_uint_fast64_t *trips; /* counts the round trips made on db (the store's); may be NULL */
};

/* A bounded pool of connections, connected lazily and again after a failure. */
struct pg_pool {
    pthread_mutex_t mu;
    pthread_mutex_t cancel_mu; /* every conns[i].cancel */
    pthread_cond_t cv;         /* a connection was returned */
    struct pg_conn *conns;
    int *free_list; /* indexes of the free conns */
    int nfree, n;
    int reads, reads_max;  /* taken by pg_pool_take_read now, and at most */
    int open;              /* connections connected (as pool_take last left them) */
    int64_t grow_after_ms; /* a connect failed while others were open: until then (clock_mono_ms)
                            * takers wait for an open connection instead of opening one */
};

#define PG_DUE_MAX 1024   /* (queue, run_at) pairs in the due list (pg_due.c) */
#define PG_LANE_HINTS 256 /* queues whose claims go through lanes, remembered (pg_claim.c) */
struct pg_due;

/* The round trips a process's estimate is the least of: a probe a second (pg_listen.c) keeps
 * it to the last several seconds, so it follows a link that changes. */
#define PG_RTT_SAMPLES 8

struct pg_store {
    struct store base; /* first: a struct store * is a struct pg_store * */
    char *url;         /* owned: the libpq URI */
    int64_t backoff_base, backoff_max;
    int64_t events_retention, events_max; /* the event log's bounds (store_options.events) */
    struct event_log_gauge events_seen;   /* the event log as the last sweep saw it (/metrics) */
    int64_t checkout_ms, statement_ms, connect_timeout_s;
    struct store_hooks hooks;
    char proc[24]; /* this process's tag in NOTIFY payloads: its own are skipped */
    struct pg_pool pool;
    atomic_int_fast64_t skew_ms; /* server clock minus this host's clock */
    /* A round trip to the server: the least of the last PG_RTT_SAMPLES measured (pg_rtt_record),
     * the listener's probes and the clock's exchanges (0: none yet). */
    atomic_int_fast64_t rtt_us;
    atomic_int_fast64_t rtt_samples[PG_RTT_SAMPLES];
    atomic_uint rtt_n;
    /* Executor: threads that run submitted calls (pg_exec.c), all under qmu. */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct pg_call_node *head, *tail;
    size_t queued; /* calls in the queue */
    int stop;
    int nthreads; /* writer threads: the most transactions in flight (--pg-writers) */
    pthread_t *threads;
    int inflight;                /* groups running now */
    int timed;                   /* writers waiting on a timer to start a group beside them */
    int cpus;                    /* of this host, for admit_wait */
    int64_t tx_us;               /* a group's time from start to end, smoothed (microseconds) */
    struct admit_times tx_times; /* the last groups' times, for their usual time */
    int64_t inflight_at_us;      /* when inflight last changed (clock_mono_us) */
    int64_t started_us;          /* when the newest group started (clock_mono_us) */
    uint64_t inflight_us;        /* the integral of inflight over time (microseconds) */
    uint64_t groups;             /* groups started */
    struct pg_listener *listener;
    struct pg_stats *stats; /* pg_stats.c */
    pthread_mutex_t due_mu;
    struct pg_due *due; /* under due_mu: [0, ndue) of PG_DUE_MAX */
    size_t ndue;
    atomic_int abandoned; /* store_abandon(): calls end STORE_UNAVAILABLE */
    int64_t lanes_swept;  /* the sweeper's thread only: the last lane it looked at */
    /* The queues whose last claim here found a lane that may hold a job for it: a hash of
     * the queue's name per slot (0: none; collisions only cost a guess). pg_claim.c. */
    atomic_uint_fast64_t lane_hints[PG_LANE_HINTS];
    atomic_uint_fast64_t commits, retries, errors;
    atomic_uint_fast64_t ops;         /* calls committed (several per commit when grouped) */
    atomic_uint_fast64_t connects;    /* connections opened (pg_conn_open) */
    atomic_uint_fast64_t trips;       /* round trips on pooled connections (pg_conn_trip) */
    atomic_uint_fast64_t notes_sent;  /* queues announced to other processes (NOTIFY) */
    atomic_uint_fast64_t notes_heard; /* other processes' notifications received */
};

static inline struct pg_store *pg_store_of(struct store *s)
{
    return (struct pg_store *)s;
}

/* --- pg_conn.c: one connection ---------------------------------------------------------- */

/* Connect c to st->url with keepalives, connect_timeout, statement_timeout and
 * application_name, and check that the server accepts writes. Returns STORE_OK, or
 * STORE_UNAVAILABLE (logged once per message, never with the password). */
enum store_result pg_conn_open(struct pg_store *st, struct pg_conn *c);

/* Close c (accepts one that is not open). */
void pg_conn_close(struct pg_conn *c);

/* Count one round trip on c (a wait for the server's answer): the functions below count
 * their own; a caller that sends a pipeline counts its Sync. This function can't fail. */
void pg_conn_trip(struct pg_conn *c);

/* Run statement id with n text parameters (NULL: SQL NULL). Prepares it on first use.
 * Returns the result (the caller PQclear()s it) when it succeeded; NULL after setting *r to
 * the failure (logged as `what`: STORE_BUSY for contention or a timeout, STORE_UNAVAILABLE for
 * a lost connection, a read-only server or a server shutting down (c is marked bad),
 * STORE_ERROR for anything else). */
PGresult *pg_conn_exec(struct pg_conn *c, enum pg_stmt_id id, int n, const char *const *params,
                       const char *what, enum store_result *r);

/* Prepare statement id on c unless it is already. Returns STORE_OK or the failure, as
 * pg_conn_exec. */
enum store_result pg_prepare(struct pg_conn *c, enum pg_stmt_id id, const char *what);

/* Pipeline mode: send statement id (prepared) with n text parameters without waiting for
 * its answer. Returns 0, or -1 when libpq refused it (the connection failed). */
int pg_send(struct pg_conn *c, enum pg_stmt_id id, int n, const char *const *params);

/* 1 when res is a successful command or query result. */
int pg_result_ok(const PGresult *res);

/* Wait until c has an answer to read without blocking (PQisBusy false), or until deadline
 * (clock_mono_ms). Returns 0, or -1 on timeout or a connection failure. */
int pg_await(struct pg_conn *c, int64_t deadline);

/* Run a plain SQL command without parameters (BEGIN, COMMIT, ROLLBACK). Returns STORE_OK or
 * the failure, as pg_conn_exec. */
enum store_result pg_command(struct pg_conn *c, const char *sql, const char *what);

/* Ask the server to cancel what c is running, from c's own thread (best effort: nothing
 * when c is not connected). This function can't fail. */
void pg_cancel(struct pg_conn *c);

/* COMMIT the transaction open on c, waiting at most timeout_ms for the answer
 * (statement_timeout does not bound the wait for a synchronous standby). Past it the wait is
 * cancelled and STORE_UNAVAILABLE returned: the commit may have happened on this server
 * alone, so it must not be acknowledged. Else STORE_OK or the failure, as pg_command. */
enum store_result pg_commit(struct pg_conn *c, int64_t timeout_ms, const char *what);

/* The failure of a result or of the connection as a store result, logged as `what`; marks c
 * bad on connection-level failures. res may be NULL (libpq returned none). */
enum store_result pg_fail(struct pg_conn *c, const PGresult *res, const char *what);

/* --- pg_pool.c ---------------------------------------------------------------------------- */

/* A pool of n connections whose every connection counts its round trips in *trips (may be
 * NULL), of which reads may hold all but keep_for_writes (at least one). Returns 0, or -1
 * (logged) when memory ran out. */
int pg_pool_init(struct pg_pool *p, int n, int keep_for_writes, atomic_uint_fast64_t *trips);
void pg_pool_destroy(struct pg_pool *p);

/* Take a connection, waiting at most st->checkout_ms for one to be free, and connect it if it
 * is not (or is bad). A connection that cannot be opened while others of the pool are open
 * (the server refuses more clients: other clients hold its max_connections) is not an
 * outage: for the next second takers wait for one of the open ones instead of opening
 * another. Returns STORE_OK with *out set, STORE_BUSY when none came free in time,
 * STORE_UNAVAILABLE when the server cannot be reached. */
enum store_result pg_pool_take(struct pg_store *st, struct pg_conn **out);

/* Return a connection taken with pg_pool_take. */
void pg_pool_give(struct pg_store *st, struct pg_conn *c);

/* pg_pool_take for a read outside any transaction: it also waits while the reads hold all
 * but the connections kept for the writers (the executor threads and the sweeper; in a pool
 * too small for that, reads hold one at most), so that slow reads cannot make a write wait
 * for a connection. Return the connection with pg_pool_give_read. */
enum store_result pg_pool_take_read(struct pg_store *st, struct pg_conn **out);
void pg_pool_give_read(struct pg_store *st, struct pg_conn *c);

/* store_abandon's part in the pool (st->abandoned is set): waits for a connection end at
 * once, and the statements running on pooled connections are cancelled. */
void pg_pool_abandon(struct pg_store *st);

/* --- pg_tx.c: one transaction ------------------------------------------------------------- */

/* --- pg_due.c: jobs this process scheduled for later ------------------------------------ */

/* When the time of a job this process scheduled comes, its queue is announced as if the job
 * had just been enqueued (on_ready here, NOTIFY to the others), so that a claim parked on any
 * process is woken at run_at, not at its next look of its own. The sweeper, poked for that
 * run_at (on_scheduled), calls pg_due_announce. Bounded to PG_DUE_MAX (queue, run_at) pairs;
 * past that the parked claims' own looks cover it. */
struct pg_due {
    int64_t at;
    char queue[JOB_QUEUE_MAX + 1];
};

/* After a commit: tell this process's hooks what n holds (store_news_fire, its on_scheduled
 * on this host's clock), the listener (NOTIFY to the others), and remember n's later queues
 * in the due list. This function can't fail (see above). */
void pg_news_publish(struct pg_store *st, const struct store_news *n);

/* Announce the queues whose remembered time is at or before now, and forget them. */
void pg_due_announce(struct pg_store *st, int64_t now);

/* One transaction: fn runs between BEGIN and COMMIT on c; it returns STORE_OK or
 * STORE_EXISTS to commit, anything else to roll back (that is the result). fn may run again
 * (after contention or a dead connection found at BEGIN) and must start from scratch; before
 * a re-run or after a rollback, discard(arg) (when not NULL) releases what fn put in its
 * outputs. Jobs noted in notes are announced after the commit: to this process's hooks at
 * once, to the other processes by the listener (pg_listen_announce). */
struct pg_tx {
    const char *name;
    size_t ops; /* calls it does (0 counts as 1), for store_stats */
    enum store_result (*fn)(struct pg_conn *c, void *arg, struct store_news *notes);
    void (*discard)(void *arg);
    void *arg;
    /* When not NULL: called with arg once BEGIN has run, before every run of fn (a call reads
     * the time it runs at there: pg_call_begin). */
    void (*begin)(void *arg);
};

/* Run tx on a pooled connection (see struct pg_tx). Returns fn's result, or STORE_BUSY,
 * STORE_UNAVAILABLE or STORE_ERROR (logged). */
enum store_result pg_tx_run(struct pg_store *st, const struct pg_tx *tx);

/* --- pg_call.c, pg_exec.c, pg_pipe.c: calls, the executor, pipelines --------------------- */

/* store_submit: set the call up for its transaction (the kind table of pg_call.c) and queue
 * it for an executor thread. */
void pg_submit(struct store *s, struct store_call *call);

/* One statement's parameters, with room for their text. */
#define PG_PARAMS_MAX 36
struct pg_bind {
    enum pg_stmt_id id;
    const char *what; /* for logs */
    int n;
    const char *params[PG_PARAMS_MAX];
    char ints[PG_PARAMS_MAX][24];
    char *heap[PG_PARAMS_MAX]; /* array parameters built by pg_arr (owned; pg_bind_free) */
};

/* Free the array parameters of b. */
void pg_bind_free(struct pg_bind *b);

/* An array parameter under construction (a PostgreSQL array literal: {"a",NULL,"b"}). */
struct pg_arr {
    char *s;
    size_t len, cap;
    int bad; /* out of memory */
};

/* Append one element: a text (NULL: SQL NULL), an integer (JOB_NONE: NULL) or a boolean. */
void pg_arr_text(struct pg_arr *a, const char *v);
void pg_arr_int(struct pg_arr *a, int64_t v);
void pg_arr_bool(struct pg_arr *a, int v);

/* Close a and return the literal (the caller frees it), or NULL when memory ran out; a is
 * empty after, either way. */
char *pg_arr_take(struct pg_arr *a);

/* Close a and make it parameter i of b (b owns it). Returns 0, or -1 when memory ran out
 * (logged; a is freed either way). */
int pg_arr_bind(struct pg_arr *a, struct pg_bind *b, int i);

/* Run statement id on c with the arrays a[0..n) as its parameters (each emptied) and drop its
 * rows: STORE_OK, or the failure (as pg_conn_exec says; STORE_ERROR when memory ran out). */
enum store_result pg_run_arrays(struct pg_conn *c, enum pg_stmt_id id, struct pg_arr *a, int n,
                                const char *what);

struct pg_call;

/* A call done by one statement, and by a read when that statement finds nothing (its guard
 * missed, an idempotency hit). Such calls share a pipeline (pg_pipe.c): their statements are
 * sent together and commit at one Sync, and their reads follow the commit. Calls of one kind
 * that `same` pairs share one statement (a set-based insert or update over arrays): one
 * parse, plan, trigger run and index descent for all of them. */
struct pg_one {
    /* Fill b for calls[0..k) (k is 1 unless `same` paired them). Returns 0, or -1 (logged:
     * STORE_ERROR). */
    int (*bind)(struct pg_call *calls, size_t k, struct pg_bind *b);
    /* The statement's successful result: set each call's outputs and result and note the
     * queues made claimable; or set calls[i].follow (with result STORE_OK) when the read
     * must decide it. */
    void (*recv)(struct pg_call *calls, size_t k, const PGresult *res, struct store_news *notes);
    /* That read: the call's result. */
    enum store_result (*follow)(struct pg_conn *c, struct pg_call *pc, struct store_news *notes);
    /* 1 when b may share a's statement; NULL: never. */
    int (*same)(const struct pg_call *a, const struct pg_call *b);
    /* 1: the follow-up writes (a claim through the lanes) and runs inside the pipeline's
     * transaction when the pipeline opened one (a call with in_tx is in it), so the call
     * commits with the others; else after their commit, in a transaction of its own. */
    int follow_in_tx;
};

/* One submitted write call on its way through the executor: the transaction that does it
 * (tx, whose arg is this struct: re-pointed whenever the struct is copied) and what that
 * transaction needs. */
struct pg_call {
    struct pg_store *st;
    struct store_call *call;
    int64_t now;              /* the call's now on the database's clock */
    size_t rows;              /* rows it locks at most (the kind table) */
    size_t bytes;             /* parameter text it adds to a shared statement (the kind table) */
    int max_jobs;             /* claim: bounded by JOB_CLAIM_MAX */
    size_t nqueues;           /* claim: bounded by JOB_QUEUES_MAX */
    struct pg_tx tx;          /* tx.arg == this struct */
    const struct pg_one *one; /* not NULL: a one-statement call (tx.fn is pg_one_tx) */
    int follow;               /* set by one->recv */
    /* Its follow-up (one->follow_in_tx) is likely: its pipeline opens a transaction (BEGIN)
     * and commits after the follow-ups (pg_pipe.c). */
    int in_tx;
    int answered; /* call->done was called (pg_call_answer): call is not ours any more */
    void *lanes;  /* claim: its candidates, read in its pipeline (pg_lanes_keep; owned) */
};

/* End pc's call: call->done, once (a second call does nothing). The caller must not touch
 * pc->call after. This function can't fail. */
void pg_call_answer(struct pg_call *pc);

/* A call queued for the executor. */
struct pg_call_node {
    struct pg_call pc;
    int64_t at_us; /* when it was queued (clock_mono_us) */
    int skip;      /* taken after store_abandon: ended without running */
    struct pg_call_node *next;
};

/* Calls one executor thread takes at once (one group). */
#define PG_GROUP_MAX 64

/* Start nthreads executor threads (each runs one group at a time) / stop them once the queue
 * is empty. How many groups are in flight at once follows the load (pg_exec.c). Returns 0,
 * or -1 (logged). */
int pg_exec_start(struct pg_store *st, int nthreads);
void pg_exec_stop(struct pg_store *st);

/* What the executor did so far, for /metrics: groups in flight now, the writers, the
 * integral of groups in flight over time (microseconds) and groups started. */
struct pg_exec_figures {
    int inflight, writers;
    uint64_t inflight_us, groups;
};
void pg_exec_figures(struct pg_store *st, struct pg_exec_figures *out);

/* Queue node (owned by the executor from here) for an executor thread. Returns 0, or -1 when
 * the executor is stopping (node stays the caller's). */
int pg_exec_push(struct pg_store *st, struct pg_call_node *node);

/* Wake the executor threads (store_abandon). */
void pg_exec_wake(struct pg_store *st);

/* Calls [first, first + n) of a pipeline, done by one statement. */
struct pg_unit {
    size_t first, n;
};

/* Lay the calls in[0..n) out in out[] once, in the order they run: first the one-statement
 * calls (with a `one`), in units of calls that share one statement (their `one` and `same`
 * agree, pairwise; each unit's calls adjacent and in their order), then the others in their
 * order; each out[i].tx.arg points at out[i]. Sets units[0..*nu). Returns how many
 * one-statement calls come first. This function can't fail. */
size_t pg_pipe_arrange(const struct pg_call *const *in, size_t n, struct pg_call *out,
                       struct pg_unit *units, size_t *nu);

/* Run calls[0..n) (one-statement calls laid out by pg_pipe_arrange in units[0..nu)) in one
 * pipeline: one round trip and one commit at its Sync when no call has in_tx; else BEGIN goes
 * first, the follow-ups that ask for it (pg_one's follow_in_tx) run in the same transaction
 * after the statements, and one COMMIT ends it. PG_PIPE_DONE: every call's result is set;
 * PG_PIPE_AGAIN: nothing was committed and each call must run alone. */
enum pg_pipe_outcome { PG_PIPE_DONE, PG_PIPE_AGAIN };
enum pg_pipe_outcome pg_pipe_run(struct pg_store *st, struct pg_call *calls, size_t n,
                                 const struct pg_unit *units, size_t nu);

/* 1 when a call that ended with r wrote nothing that must be undone, so that its
 * transaction may go on with other calls and commit (see pg_claim_prepare and the others
 * below). */
int pg_result_shareable(enum store_result r);

/* The now of calls[0..k) that share one statement: the latest of theirs. */
int64_t pg_calls_now(const struct pg_call *calls, size_t k);

/* The transaction of a one-statement call (pc->one): bind, run, recv, and follow when asked
 * (struct pg_tx's fn, with arg a struct pg_call). */
enum store_result pg_one_tx(struct pg_conn *c, void *arg, struct store_news *notes);

/* Each write call as a transaction (pg_enqueue.c, pg_claim.c, pg_lease.c, pg_admin.c): set
 * pc->tx up for pc->call (pc->st, pc->call and pc->now are set). Returns 1, or 0 when the
 * call needs no transaction (call->result is then set). A transaction function returns
 * STORE_OK or STORE_EXISTS after its writes, or one of STORE_NOT_FOUND, STORE_LEASE_LOST and
 * STORE_CONFLICT having written nothing (so it can share a transaction with other calls,
 * see pg_exec.c); any other result may follow writes and must roll back. */
int pg_enqueue_prepare(struct pg_call *pc);
int pg_claim_prepare(struct pg_call *pc);
int pg_heartbeat_prepare(struct pg_call *pc);    /* pg_lease.c */
int pg_complete_prepare(struct pg_call *pc);     /* pg_lease.c */
int pg_fail_prepare(struct pg_call *pc);         /* pg_lease.c */
int pg_cancel_prepare(struct pg_call *pc);       /* pg_admin.c */
int pg_retry_prepare(struct pg_call *pc);        /* pg_admin.c */
int pg_pause_prepare(struct pg_call *pc);        /* pg_queue.c */
int pg_purge_prepare(struct pg_call *pc);        /* pg_queue.c */
int pg_limit_put_prepare(struct pg_call *pc);    /* pg_limits.c */
int pg_limit_delete_prepare(struct pg_call *pc); /* pg_limits.c */
int pg_snooze_prepare(struct pg_call *pc);       /* pg_lease.c */

/* The schedule writes (pg_schedules.c). */
int pg_schedule_put_prepare(struct pg_call *pc);
int pg_schedule_delete_prepare(struct pg_call *pc);
int pg_schedule_tick_prepare(struct pg_call *pc);
int pg_schedule_pass_prepare(struct pg_call *pc);

/* The SQS queue writes (pg_sqs.c). */
int pg_sqs_queue_put_prepare(struct pg_call *pc);
int pg_sqs_queue_delete_prepare(struct pg_call *pc);

/* The webhook writes (pg_webhooks.c): put, delete, lease and done, by call->webhook->op. */
int pg_webhook_prepare(struct pg_call *pc);

/* Enqueue one job of sp at now inside the caller's transaction, as store_enqueue does for one
 * spec (an idempotency_key hit: *out is the job that holds it, *created stays 0; a dedup key:
 * its lock, then what its mode decides). Returns STORE_OK or the failure. Used by a
 * schedule's tick (pg_enqueue.c). */
enum store_result pg_enqueue_one(struct pg_conn *c, const struct job_spec *sp, int64_t now,
                                 struct job *out, int *created, struct store_news *notes);

/* Enqueue the copy of job j, whose lease just ended failed for a dead-letter move
 * (job_dead_letter), in queue target (store_dead_letter_spec) inside the caller's
 * transaction. Returns STORE_OK or the failure. Used by fail (pg_lease.c) and the sweep. */
enum store_result pg_dead_letter(struct pg_conn *c, const struct job *j, const char *target,
                                 int64_t now, struct store_news *notes);

/* For tests: on (1), the enqueue reads the rows of its insert from the last to the first, as
 * a server may send them (RETURNING promises no order); 0: in the order they came. */
void pg_enqueue_reverse_rows(int on);

/* --- reads and sweep (pg_read.c, pg_throughput.c, pg_sweep.c) ------------------------------ */

/* Take a pooled connection, run one statement outside any transaction (a read, or a write
 * that is safe to repeat), give the connection back; run it once more on a new connection
 * when the first had died. NULL when it failed (*r says why; counted as a store error). */
PGresult *pg_read_one(struct pg_store *st, enum pg_stmt_id id, int n, const char *const *params,
                      const char *what, enum store_result *r);
enum store_result pg_read_get(struct store *s, int64_t id, struct job *out);
enum store_result pg_read_list(struct store *s, const struct list_filter *f, struct job *out,
                               size_t *n, int *more);
enum store_result pg_read_queues(struct store *s, int64_t now, struct queue_stats **out, size_t *n);
enum store_result pg_read_attempts(struct store *s, int64_t id, struct job_attempt **out,
                                   size_t *n);
enum store_result pg_read_ping(struct store *s);

/* --- the event log (pg_events.c; written by a trigger: pg_schema.c, migration 15) ------- */

/* store_events: one statement, one snapshot. */
enum store_result pg_events_read(struct store *s, const struct event_filter *f,
                                 struct event_page *out);

/* The sweep's part, in the open transaction on c: delete at most `batch` of the oldest events
 * older than now - retention or beyond the newest `max`; *deleted is how many went, *seen the
 * log after the deletes (written and kept from the table's statistics). */
enum store_result pg_events_prune(struct pg_conn *c, int64_t now, int64_t retention, int64_t max,
                                  int batch, int *deleted, struct event_log_seen *seen);
enum store_result pg_read_links(struct store *s, int64_t id, int dependents, struct job_link **out,
                                size_t *n, int *more); /* pg_links.c */
/* store_limits (pg_limits.c). */
enum store_result pg_read_limits(struct store *s, const char *key, int64_t now, struct limit **out,
                                 size_t *n);
/* store_schedules, _next and _count (pg_schedules.c). */
enum store_result pg_read_schedules(struct store *s, const char *name, struct store_schedule **out,
                                    size_t *n);
enum store_result pg_read_schedules_next(struct store *s, int limit, struct store_schedule **out,
                                         size_t *n);
enum store_result pg_read_schedules_count(struct store *s, size_t *n);
/* store_sqs_queues (pg_sqs.c). */
enum store_result pg_read_sqs_queues(struct store *s, const char *prefix, int exact,
                                     const char *after, int limit, struct store_sqs_queue **out,
                                     size_t *n);

/* store_webhooks (pg_webhooks.c). */
enum store_result pg_read_webhooks(struct store *s, const char *name, struct store_webhook **out,
                                   size_t *n);
/* Shared throughput buckets (pg_throughput.c): store_throughput_publish/_others. */
enum store_result pg_throughput_publish(struct store *s, int64_t now,
                                        const struct counters_point *pts, size_t n);
enum store_result pg_throughput_others(struct store *s, int64_t now, struct counters_point *pts,
                                       size_t n);
void pg_read_stats(struct store *s, struct store_stats *out);
size_t pg_read_metrics(struct store *s, struct store_metric out[STORE_METRICS_MAX]);
enum store_result pg_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                           struct sweep_result *res);

/* --- pg_clock.c ------------------------------------------------------------------------------ */

/* The caller's now on the database's clock (see the top of this file). */
int64_t pg_now(struct pg_store *st, int64_t now);

/* pg_now for the seam (struct store_ops' clock): s is a pg_store. This function can't fail. */
int64_t pg_clock(struct store *s, int64_t now);

/* A time t on the database's clock as the caller's clock shows it (pg_now's inverse): for
 * the hooks, whose callers time their waits on their own clock. */
int64_t pg_host_time(struct pg_store *st, int64_t t);

/* Measure the skew on c (one round trip) and keep it. Returns STORE_OK or the failure;
 * STORE_UNAVAILABLE (logged) also when the server is a standby, or when a newer jobqd applied
 * a migration that does not keep this program working (pg_schema.h). */
enum store_result pg_clock_sync(struct pg_store *st, struct pg_conn *c);

/* Record a measured round trip of us microseconds and update st->rtt_us to the least of the
 * last PG_RTT_SAMPLES. Any thread; this function can't fail. */
void pg_rtt_record(struct pg_store *st, int64_t us);

/* The time calls[0..n) run at, read when they are about to run: once their connection is
 * taken and their transaction begun, and again after a wait for a lock they decide under.
 * Each call made at_clock (store.h) moves its now up to the database's clock (pg_now of
 * clock_now()), never back; the others keep theirs. This function can't fail. */
void pg_calls_clock(struct pg_call *calls, size_t n);

/* pg_calls_clock of one call, as struct pg_tx's begin (arg: its struct pg_call). */
void pg_call_begin(void *arg);

/* --- pg_row.c: job rows on a connection ------------------------------------------------------ */

/* Run statement id, which returns at most one job row, into out (its lease token too when
 * with_token): STORE_OK, STORE_NOT_FOUND when no row came back, or the failure. */
enum store_result pg_one_row(struct pg_conn *c, enum pg_stmt_id id, int n,
                             const char *const *params, int with_token, const char *what,
                             struct job *out);

/* Read job id on c into out (with its lease token when with_token): STORE_OK,
 * STORE_NOT_FOUND or the failure. */
enum store_result pg_get_on(struct pg_conn *c, int64_t id, int with_token, struct job *out);

/* Job id read on c: STORE_NOT_FOUND when it is gone, else exists_result (after freeing the
 * row), or the failure. For follow-ups: a guard missed an existing job. */
enum store_result pg_miss(struct pg_conn *c, int64_t id, enum store_result exists_result);

/* --- pg_listen.c ---------------------------------------------------------------------------- */

/* Start the listening thread on its own connection (not pooled). Returns 0, or -1 (logged). */
int pg_listen_start(struct pg_store *st);
void pg_listen_stop(struct pg_store *st);

/* Hand the queues of n (committed) to the listener, which NOTIFYs the other processes soon,
 * coalescing (see pg_listen.c). n stays the caller's. No-op without a listener. */
void pg_listen_announce(struct pg_store *st, const struct store_news *n);

/* --- pg_stats.c ----------------------------------------------------------------------------- */

/* Start / stop the thread that keeps the planner's statistics of the jobs table fresh: once a
 * second it asks whether they are stale (PG_STATS_STALE) on a pooled connection and then runs
 * ANALYZE there, outside any transaction: one process at a time (PG_STATS_KEY), none within
 * 10 s of the last ANALYZE anywhere. Start returns 0, or -1 (logged). */
int pg_stats_start(struct pg_store *st);
void pg_stats_stop(struct pg_store *st);

#endif
