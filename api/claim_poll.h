/* A claim with its long poll, shared by the native POST /claim (h_worker.c) and the SQS
 * ReceiveMessage (sqs_receive.c). No thread waits: the claim runs as a store call with the
 * connection suspended (pending.h), and a look that found nothing parks in the wait queue
 * (server/waitq.h), which suspends the connection. A poll arms its waiter before it looks
 * (so an enqueue in between is not missed); the waiter's wake resumes the connection, and
 * http.c calls the handler again, which calls claim_poll_step() to go on. */
#ifndef JOBQ_CLAIM_POLL_H
#define JOBQ_CLAIM_POLL_H

#include <microhttpd.h>

#include "pending.h"
#include "request.h"
#include "waitq.h"

struct claim_poll;

/* How a poll answers: with the n jobs claimed (cp->jobs[0..n), whose strings the answer may
 * take; claim_poll_clear() frees what is left), or with a store failure. Each must answer
 * (or return MHD_NO). */
struct claim_poll_answers {
    enum MHD_Result (*claimed)(struct request *rq, struct claim_poll *cp, size_t n);
    enum MHD_Result (*failed)(struct request *rq, enum store_result r);
};

struct claim_poll {
    struct pending p; /* the claim in flight */
    struct claim_req req;
    struct job *jobs; /* req.max_jobs of them */
    /* private */
    const struct claim_poll_answers *answers;
    struct waiter w;
    struct waitq *q;
    struct MHD_Connection *conn;
    int wait;          /* wait_ms > 0 */
    int armed;         /* the waiter is armed for this look */
    int parked;        /* suspended in the waitq, not in a store call */
    int woken;         /* this look follows a wake-up from a park */
    int rounds;        /* looks since the last park */
    int64_t parked_us; /* clock_mono_us() when it first parked; 0: never parked */
};

/* Make cp a poll of req (borrowed: its strings must outlive cp) for rq that waits up to
 * wait_ms (0: one look), answering through answers (static). Allocates cp->jobs. Returns 0,
 * or -1 when out of memory (nothing to clear beyond claim_poll_clear). */
int claim_poll_init(struct claim_poll *cp, struct request *rq, const struct claim_req *req,
                    int64_t wait_ms, const struct claim_poll_answers *answers);

/* Release what cp holds and disarm its waiter (after this the waitq never wakes it). Call
 * from the request's state_free. Accepts NULL. */
void claim_poll_clear(struct claim_poll *cp);

/* Look for jobs the first time. cp must live in rq->state. Returns MHD_YES. */
enum MHD_Result claim_poll_start(struct request *rq, struct claim_poll *cp);

/* Go on after the connection was resumed (the claim call is over, or the parked poll was
 * woken): answer, park, or look again. Returns what an answer returns, MHD_YES when parked
 * or looking, MHD_NO when the client went away. */
enum MHD_Result claim_poll_step(struct request *rq, struct claim_poll *cp);

#endif
