/* A store write that keeps its request's connection suspended until the write is over
 * (store_submit), so that no server thread waits for the disk: a handler fills the call,
 * keeps the struct pending in its rq->state, and returns pending_submit(). libmicrohttpd calls
 * the handler again once the write committed or failed; the handler then finds its state in
 * rq->state with pending_over() true, and answers from call.result and the call's outputs. */
#ifndef JOBQ_PENDING_H
#define JOBQ_PENDING_H

#include <microhttpd.h>
#include <stdatomic.h>

#include "request.h"
#include "store.h"

struct pending {
    struct store_call call; /* filled by the handler before pending_submit() */
    /* private */
    struct MHD_Connection *conn;
    struct app *app;
    atomic_int over;
};

/* Suspend rq's connection and submit p->call to rq->app->store (call.done and call.ctx are
 * set here); once the server is stopping (http_stop), end it STORE_UNAVAILABLE instead. p must live in rq->state (freed by rq->state_free, which runs only after the
 * write is over). Returns MHD_YES. */
enum MHD_Result pending_submit(struct request *rq, struct pending *p);

/* 1 once p's write is over and its results may be read. */
int pending_over(struct pending *p);

#endif
