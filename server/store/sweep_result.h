/* What one sweep batch did (store_sweep(), store.h): its totals, and the leases it ended and
 * the jobs it expired by queue, which the backends note as their transactions commit and
 * counters.h counts. */
#ifndef JOBQ_SWEEP_RESULT_H
#define JOBQ_SWEEP_RESULT_H

#include "job.h"

/* The leases one sweep batch ended in one queue. */
struct sweep_queue {
    char queue[JOB_QUEUE_MAX + 1];
    int expired;   /* error_code "lease_expired" */
    int timed_out; /* error_code "timeout" */
    int requeued;  /* of those, sent back to queued */
    int failed;    /* of those, failed (attempts exhausted) */
    int lapsed;    /* queued jobs cancelled at their expires_at (error_code "expired") */
};

/* Totals of one sweep batch. */
struct sweep_result {
    int requeued; /* expired or timed-out leases sent back to queued */
    int failed;   /* expired or timed-out leases with attempts exhausted */
    int deleted;  /* succeeded/cancelled jobs past retention */
    int promoted; /* scheduled jobs that became due (a backend that needs no promotion: 0) */
    int expired;  /* queued jobs past their expires_at, cancelled (error_code "expired") */
    int visited;  /* ended or retried jobs whose dependents a write left for the sweep */
    int events;   /* events past the log's retention or count bound, deleted */
    int lanes;    /* lanes that no job references, dropped (a batch: of the lanes looked at) */
    int claims;   /* claim rows of rate-limited keys older than every window, deleted */
    int led;      /* 1: this process did the sweep (one sweeper at a time across processes) */
    /* The leases ended and the jobs expired by queue, nqueues rows (each part of the batch
     * that notes adds at most one per job, so at most `batch` per part): filled by the
     * backend with sweep_result_note() and sweep_result_note_expired() from the rows its
     * committed transactions changed, then counted (counters.h) and freed by store_sweep().
     * NULL and 0 when store_sweep() returns. */
    struct sweep_queue *queues;
    int nqueues;
    int kept; /* private: queues[0..kept) are rows of parts that committed */
    int room; /* private: the rows queues can hold */
};

/* For backends: add one lease of `queue` that the sweep batch ended (timed_out: by max
 * runtime, else by expiry; requeued: back to queued, else failed) to res->queues, which
 * holds at most cap rows (the batch) for the part that runs. Returns 0, or -1 when out of
 * memory (logged). */
int sweep_result_note(struct sweep_result *res, int cap, const char *queue, int timed_out,
                      int requeued);

/* For backends: the same for one queued job of `queue` that the sweep batch cancelled at its
 * expires_at. */
int sweep_result_note_expired(struct sweep_result *res, int cap, const char *queue);

/* For backends: forget the rows noted since the last sweep_result_keep() (a transaction that
 * runs again, or failed, starts over). */
static inline void sweep_result_forget(struct sweep_result *res)
{
    res->nqueues = res->kept;
}

/* For backends: the part whose rows were noted committed: keep them. */
static inline void sweep_result_keep(struct sweep_result *res)
{
    res->kept = res->nqueues;
}

#endif
