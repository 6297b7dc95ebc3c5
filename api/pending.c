/* Store writes with the connection suspended (see pending.h). */
#include "pending.h"

#include "app.h"

/* On the store's writer thread (or the handler's own, when the call could not start). */
static void pending_done(struct store_call *call)
{
    struct pending *p = call->ctx;
    struct MHD_Connection *conn = p->conn;
    struct app *app = p->app;
    atomic_store(&p->over, 1);
    /* Once resumed, the connection's thread may answer and free p; once the count drops,
     * http_stop() may stop the daemon (a resumed connection is fine then, a suspended one is
     * not). */
    MHD_resume_connection(conn);
    atomic_fetch_sub(&app->store_calls, 1);
}

enum MHD_Result pending_submit(struct request *rq, struct pending *p)
{
    p->conn = rq->conn;
    p->app = rq->app;
    atomic_store(&p->over, 0);
    p->call.done = pending_done;
    p->call.ctx = p;
    /* Counted before the refusal is checked (http_stop sets it, then reads the count): a
     * call is either refused or waited for. */
    atomic_fetch_add(&rq->app->store_calls, 1);
    /* Suspended before the write can finish, so that the resume never comes first. */
    MHD_suspend_connection(rq->conn);
    if (atomic_load(&rq->app->refuse_calls)) {
        p->call.result = STORE_UNAVAILABLE; /* shutting down: 503 */
        pending_done(&p->call);
        return MHD_YES;
    }
    store_submit(rq->app->store, &p->call);
    return MHD_YES;
}

int pending_over(struct pending *p)
{
    return atomic_load(&p->over);
}
