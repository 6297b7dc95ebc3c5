/* Store calls with the connection suspended (see pending.h). */
#include "pending.h"

#include <stddef.h>
#include <stdlib.h>

#include "app.h"
#include "clock.h"
#include "reply.h"
#include "whdeliver.h"

/* Count a call and suspend rq's connection, before the call can finish, so that the resume
 * never comes first. Counted before the refusal is read (http_stop sets it, then reads the
 * count): a call is either refused or waited for. Returns 1 when calls are refused now. */
int pending_suspend(struct MHD_Connection *conn, struct app *app)
{
    atomic_fetch_add(&app->store_calls, 1);
    MHD_suspend_connection(conn);
    return atomic_load(&app->refuse_calls);
}

static int suspend_counted(struct request *rq)
{
    return pending_suspend(rq->conn, rq->app);
}

/* The call is over. Once resumed, the connection's thread may answer and free the call's
 * state; once the count drops, http_stop() may stop the daemon (a resumed connection is fine
 * then, a suspended one is not). So conn and app are the caller's copies. */
void pending_resume(struct MHD_Connection *conn, struct app *app)
{
    MHD_resume_connection(conn);
    atomic_fetch_sub(&app->store_calls, 1);
}

/* On the store's writer thread (or the handler's own, when the call could not start). A
 * committed write may have written events: the delivery thread looks now (whdeliver_poke). */
static void pending_done(struct store_call *call)
{
    struct pending *p = call->ctx;
    struct app *app = p->app;
    if (call->result == STORE_OK)
        whdeliver_poke(app->webhooks);
    pending_resume(p->conn, app);
}

enum MHD_Result pending_submit(struct request *rq, struct pending *p)
{
    p->conn = rq->conn;
    p->app = rq->app;
    p->call.done = pending_done;
    p->call.ctx = p;
    p->call.at_clock = 1; /* its now is the clock's at arrival: decided when it runs */
    if (suspend_counted(rq)) {
        p->call.result = STORE_UNAVAILABLE; /* shutting down: 503 */
        pending_done(&p->call);
        return MHD_YES;
    }
    store_submit(rq->app->store, &p->call);
    return MHD_YES;
}

/* On a reader thread, or on the thread that gave up on the read (workers_abandon, or the
 * handler's own when the read could not be queued). */
static void read_run(struct work *w, int abandoned)
{
    struct pending_read *r =
        (struct pending_read *)((char *)w - offsetof(struct pending_read, work));
    if (abandoned)
        r->result = STORE_UNAVAILABLE; /* shutting down: 503 */
    else
        r->result = r->read(r, r->app->store);
    pending_resume(r->conn, r->app);
}

enum MHD_Result pending_read_submit(struct request *rq, struct pending_read *r)
{
    r->conn = rq->conn;
    r->app = rq->app;
    r->work.run = read_run;
    if (suspend_counted(rq)) {
        read_run(&r->work, 1);
        return MHD_YES;
    }
    if (workers_submit(rq->app->readers, &r->work) != 0) {
        r->result = STORE_BUSY; /* too many reads wait already: 503 */
        pending_resume(r->conn, r->app);
    }
    return MHD_YES;
}

void *pending_read_new(struct request *rq, size_t size,
                       enum store_result (*read)(struct pending_read *r, struct store *s),
                       void (*state_free)(void *state))
{
    struct pending_read *r = calloc(1, size);
    if (!r)
        return NULL;
    r->read = read;
    rq->state = r;
    rq->state_free = state_free ? state_free : free;
    return r;
}

enum MHD_Result pending_read_start(struct request *rq, size_t size,
                                   enum store_result (*read)(struct pending_read *r,
                                                             struct store *s),
                                   void (*state_free)(void *state))
{
    struct pending_read *r = pending_read_new(rq, size, read, state_free);
    if (!r)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    return pending_read_submit(rq, r);
}

static enum store_result queues_run(struct pending_read *r, struct store *s)
{
    struct queues_read *q = (struct queues_read *)r;
    return store_queues(s, clock_now(), &q->rows, &q->n);
}

void queues_read_init(struct queues_read *q)
{
    *q = (struct queues_read){.r.read = queues_run};
}

void queues_read_clear(struct queues_read *q)
{
    if (q)
        queue_stats_free(q->rows, q->n);
}

static void queues_read_free(void *arg)
{
    queues_read_clear(arg);
    free(arg);
}

enum MHD_Result queues_read_start(struct request *rq)
{
    return pending_read_start(rq, sizeof(struct queues_read), queues_run, queues_read_free);
}
