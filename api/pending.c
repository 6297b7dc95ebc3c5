/* Store writes with the connection suspended (see pending.h). */
#include "pending.h"

#include "app.h"

/* On the store's writer thread (or the handler's own, when the call could not start). */
static void pending_done(struct store_call *call)
{
    struct pending *p = call->ctx;
    struct MHD_Connection *conn = p->conn;
    atomic_store(&p->over, 1);
    /* Last: once resumed, the connection's thread may answer and free p. */
    MHD_resume_connection(conn);
}

enum MHD_Result pending_submit(struct request *rq, struct pending *p)
{
    p->conn = rq->conn;
    atomic_store(&p->over, 0);
    p->call.done = pending_done;
    p->call.ctx = p;
    /* Suspended before the write can finish, so that the resume never comes first. */
    MHD_suspend_connection(rq->conn);
    store_submit(rq->app->store, &p->call);
    return MHD_YES;
}

int pending_over(struct pending *p)
{
    return atomic_load(&p->over);
}
