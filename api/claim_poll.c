/* A claim with its long poll (see claim_poll.h). */
#include "claim_poll.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "app.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"

/* How many times a claim looks again after its waiter was signaled, before it parks. */
#define CLAIM_ROUNDS 4

/* Called by waitq_park() with the waitq lock held. */
static void poll_suspend(void *arg)
{
    struct claim_poll *cp = arg;
    MHD_suspend_connection(cp->conn);
}

/* Called once by the waitq (lock held) when the parked claim should look again. */
static void poll_wake(void *arg)
{
    struct claim_poll *cp = arg;
    MHD_resume_connection(cp->conn);
}

int claim_poll_init(struct claim_poll *cp, struct request *rq, const struct claim_req *req,
                    int64_t wait_ms, const struct claim_poll_answers *answers)
{
    cp->req = *req;
    cp->answers = answers;
    cp->q = rq->app->waitq;
    cp->conn = rq->conn;
    cp->jobs = calloc((size_t)req->max_jobs, sizeof *cp->jobs);
    if (!cp->jobs)
        return -1;
    cp->wait = wait_ms > 0;
    cp->w.queues = req->queues;
    cp->w.nqueues = req->nqueues;
    cp->w.deadline_ms = clock_mono_ms() + wait_ms;
    cp->w.wake = poll_wake;
    cp->w.arg = cp;
    return 0;
}

void claim_poll_clear(struct claim_poll *cp)
{
    if (!cp)
        return;
    waitq_disarm(cp->q, &cp->w); /* after this the waitq never calls poll_wake() */
    if (cp->jobs)
        job_array_free(cp->jobs, (size_t)cp->req.max_jobs);
    cp->jobs = NULL;
}

/* Answer the n jobs claimed. */
static enum MHD_Result answer(struct request *rq, struct claim_poll *cp, size_t n)
{
    metrics_claim_answered(cp->parked_us ? clock_mono_us() - cp->parked_us : 0, n > 0);
    return cp->answers->claimed(rq, cp, n);
}

/* Look for jobs: arm the waiter first (so that an enqueue between the look and the park is
 * not missed), then submit the claim; claim_poll_step() goes on when it is over. */
static enum MHD_Result look(struct request *rq, struct claim_poll *cp)
{
    cp->armed = cp->wait && waitq_arm(cp->q, &cp->w) == 0;
    cp->p.call = (struct store_call){
        .kind = STORE_CALL_CLAIM, .now = clock_now(), .claim = {.req = &cp->req, .out = cp->jobs}};
    return pending_submit(rq, &cp->p);
}

enum MHD_Result claim_poll_start(struct request *rq, struct claim_poll *cp)
{
    return look(rq, cp);
}

/* A claim woken to take a job cannot look: wake another waiter in its place. */
static void pass_wake_on(struct claim_poll *cp)
{
    for (size_t i = 0; i < cp->req.nqueues; i++)
        waitq_notify_some(cp->q, cp->req.queues[i], 1);
}

/* The claim call is over: answer, or park when it found nothing and the wait is not over. */
static enum MHD_Result looked(struct request *rq, struct claim_poll *cp)
{
    const struct store_call *call = &cp->p.call;
    if (call->result != STORE_OK) {
        waitq_disarm(cp->q, &cp->w);
        if (cp->woken)
            pass_wake_on(cp);
        return cp->answers->failed(rq, call->result);
    }
    cp->woken = 0;
    if (call->claim.n > 0 || !cp->armed || clock_mono_ms() >= cp->w.deadline_ms) {
        waitq_disarm(cp->q, &cp->w);
        return answer(rq, cp, call->claim.n);
    }
    /* 0: parked, the connection is suspended until poll_wake(); 1: signaled, look again. */
    cp->parked = 1;
    if (!cp->parked_us)
        cp->parked_us = clock_mono_us();
    if (waitq_park(cp->q, &cp->w, poll_suspend, cp) == 0)
        return MHD_YES;
    cp->parked = 0;
    if (++cp->rounds < CLAIM_ROUNDS)
        return look(rq, cp);
    /* Signaled every round but others took the jobs: answer empty, the worker polls again. */
    return answer(rq, cp, 0);
}

/* 1 when the client closed its connection while the claim was parked. Claiming for it would
 * hide jobs until their leases expire, so a resumed claim checks first. A client that sent
 * more bytes (a pipelined request) is still there. */
static int client_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return 0;
    char byte;
    ssize_t r = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

enum MHD_Result claim_poll_step(struct request *rq, struct claim_poll *cp)
{
    if (!cp->parked)
        return looked(rq, cp);
    /* Woken from a park. */
    cp->parked = 0;
    cp->woken = 1;
    cp->rounds = 0;
    if (client_gone(rq->conn)) {
        log_debug("parked claim: the client went away");
        pass_wake_on(cp);
        return MHD_NO;
    }
    if (waitq_closing(rq->app->waitq))
        return answer(rq, cp, 0); /* shutdown: parked polls answer empty */
    return look(rq, cp);
}
