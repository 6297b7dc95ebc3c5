/* The transaction runner of the SQLite store. Every write is a callback (struct sqlite_tx)
 * run on the one write connection (sqlite_writer.h) by the writer thread. The writer takes
 * every transaction waiting for it, up to SQLITE_GROUP_MAX of them, and runs them in one
 * BEGIN IMMEDIATE..COMMIT; one that fails is undone alone, and each is answered only after
 * the commit (group commit). A lone transaction commits at once: nothing waits for company.
 *
 * Undoing one alone needs no savepoint: a write that fails before changing a row (a stale
 * lease, a missing job: by far the most common failures) has nothing to undo, and the
 * others go on; one that fails after changing rows (a fault in the middle of a batch) makes
 * the runner roll the group back and run the others again without it. Savepoints would
 * cost every write a statement journal; this costs only the rare failure. */
#ifndef JOBQ_SQLITE_TX_H
#define JOBQ_SQLITE_TX_H

#include <stddef.h>
#include <stdint.h>

#include "sqlite_conn.h"
#include "sqlite_counts.h"
#include "sqlite_events.h"
#include "sqlite_writer.h"
#include "store.h"
#include "store_news.h"

/* What a transaction made happen, for the hooks the runner calls after its commit. */
struct sqlite_notes {
    /* Queues in which jobs became claimable, and those that got jobs stored as scheduled
     * (with the earliest run_at of each): the news both backends share (store_news.h). */
    struct store_news news;
    int promoted;     /* a promotion ran: next_due is what it left scheduled */
    int64_t next_due; /* the earliest run_at still scheduled after it, SQLITE_DUE_NONE */
    /* How its jobs moved between queues and statuses (written before the group's COMMIT). */
    struct sqlite_counts counts;
    /* The changes of its jobs' API statuses, whose events the runner writes after its work. */
    struct sqlite_events events;
    /* What it learnt of the lanes (enum sqlite_lanes_known): a lane made, or none found. */
    int lanes;
};

/* Whether the database holds a lane: a claim skips the lanes' statements when it holds
 * none (a store whose jobs never had requires or a concurrency key pays nothing for them).
 * Only the writer makes and drops lanes (the sweep drops the lanes no job references, and
 * then says whether any is left). */
enum sqlite_lanes_known { SQLITE_LANES_UNKNOWN = -1, SQLITE_LANES_NONE = 0, SQLITE_LANES_SOME = 1 };

#define SQLITE_TX_TRIES 5  /* BEGIN..COMMIT attempts while the database is busy */
#define SQLITE_TX_RERUNS 8 /* a group run again without a failed write, at most */

/* An empty notes value (no allocation). */
#define SQLITE_NOTES_INIT                                                                          \
    {                                                                                              \
        .promoted = 0, .next_due = SQLITE_DUE_NONE, .counts = SQLITE_COUNTS_INIT,                  \
        .events = SQLITE_EVENTS_INIT, .lanes = SQLITE_LANES_UNKNOWN                                \
    }

/* Record that a promotion ran and left next_due (SQLITE_DUE_NONE: nothing) scheduled. This
 * function can't fail. */
void sqlite_notes_promoted(struct sqlite_notes *n, int64_t next_due);

/* Note that job id of queue moved from stored status `from` (-1: it was inserted) to `to`:
 * its count move (sqlite_counts_move) and its event (sqlite_events_note; `outcome` is the
 * row's attempt outcome after the change). Returns 0, or -1 when memory ran out (logged; the
 * caller fails its transaction). */
int sqlite_notes_move(struct sqlite_notes *n, int64_t id, const char *queue, int from, int to,
                      int outcome);

/* Free what n holds and empty it. Accepts NULL. */
void sqlite_notes_free(struct sqlite_notes *n);

/* One write transaction. fn returns an enum store_result: STORE_OK or STORE_EXISTS keep its
 * work; anything else rolls it back and is its result (STORE_BUSY is retried). fn may run
 * more than once (after a busy rollback, or when the group it was part of was rolled back)
 * and must start from scratch every time; on every rollback of its work the runner first
 * calls discard(arg) (when not NULL) to release what fn put in its outputs, and empties
 * notes. fn runs on the writer thread. */
struct sqlite_tx {
    const char *name; /* for logs: "claim", "enqueue", ... */
    int (*fn)(struct sqlite_conn *c, void *arg);
    void (*discard)(void *arg);
    void *arg;
    struct sqlite_notes *notes; /* may be NULL; emptied and freed by the runner */
    /* Where fn reads the time it decides at (in arg or in its call), or NULL: a call made
     * at_clock (store.h), whose time the runner moves up to the store's clock (clock_now())
     * when the transaction has begun, before every run of fn. */
    int64_t *now;
    int weight; /* rows it may write at most, for SQLITE_GROUP_WEIGHT; 0 is 1 */
    /* sqlite_tx_submit: called once, on the writer thread (or on the caller's thread when
     * the transaction could not be queued), after result is set and notes freed, with no
     * lock of the store held. The runner never touches tx after calling it. */
    void (*done)(struct sqlite_tx *tx);
    void *done_arg;
    enum store_result result; /* set by the runner */
    int settled;              /* the runner's: failed for good within its group */
    struct sqlite_tx *next;   /* the writer's queue */
};

/* Queue tx for the writer thread and return at once; tx->done(tx) reports the result. The
 * outcome is that of sqlite_tx_run. tx must stay valid until done is called. */
void sqlite_tx_submit(struct sqlite_writer *w, struct sqlite_tx *tx);

/* Run tx and wait for its result: fn's result, STORE_BUSY, STORE_UNAVAILABLE or STORE_ERROR
 * (logged). tx->done is set by this function. */
enum store_result sqlite_tx_run(struct sqlite_writer *w, struct sqlite_tx *tx);

/* On the writer thread: run the n (1..SQLITE_GROUP_MAX) transactions of a group. Takes the
 * write mutex, BEGIN IMMEDIATE, runs each, writes the count moves of those that went through
 * (sqlite_counts_write), COMMIT, releases the mutex; then calls
 * hooks.on_ready once per distinct queue and hooks.on_scheduled once with the earliest
 * run_at, for the transactions that were committed; then each one's done.
 * - A transaction whose fn fails gets fn's result and leaves nothing behind; the others are
 *   committed (when it had changed rows, the group is rolled back and the others run again
 *   without it, at most SQLITE_TX_RERUNS times: then the rest fail with its result).
 * - STORE_BUSY anywhere (BEGIN, fn, COMMIT) rolls the group back and runs it again from
 *   scratch, at most SQLITE_TX_TRIES times (each waiting the connection's busy timeout);
 *   then every transaction gets STORE_BUSY.
 * - A failure of BEGIN, of the counts or of COMMIT rolls the whole group back: every
 *   transaction gets that result (STORE_UNAVAILABLE, STORE_ERROR), nothing is half-applied,
 *   no hook runs.
 * Never leaves a transaction open. The outcome is reported to the writer
 * (sqlite_heal_note), which heals the connection after repeated faults. */
void sqlite_tx_group(struct sqlite_writer *w, struct sqlite_tx **txs, size_t n);

#endif
