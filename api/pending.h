/* Store calls that keep their request's connection suspended until they are over, so that no
 * HTTP thread waits for the database. A write (store_submit): a handler fills the call,
 * keeps the struct pending in its rq->state, and returns pending_submit(). libmicrohttpd calls
 * the handler again once the write committed or failed; the handler then finds its state in
 * rq->state (the write is over: MHD resumes a connection only after its done()), and answers from call.result and the call's outputs.
 * A read (struct pending_read, below) goes the same way through the reader threads. */
#ifndef JOBQ_PENDING_H
#define JOBQ_PENDING_H

#include <microhttpd.h>
#include <stdatomic.h>

#include "request.h"
#include "store.h"
#include "workers.h"

struct pending {
    struct store_call call; /* filled by the handler before pending_submit() */
    /* private */
    struct MHD_Connection *conn;
    struct app *app;
};

/* Suspend conn (from its handler or its content reader), counted as a store call so that
 * http_stop waits for its resume; counted before the refusal is read, so a call is either
 * refused or waited for. Returns 1 when calls are refused now (the caller then resumes it at
 * once). */
int pending_suspend(struct MHD_Connection *conn, struct app *app);

/* Resume conn and uncount it. conn and app are the caller's copies: once resumed, the
 * connection's thread may free the state that held them. */
void pending_resume(struct MHD_Connection *conn, struct app *app);

/* Suspend rq's connection and submit p->call to rq->app->store (call.done and call.ctx are
 * set here, and call.at_clock: the call is decided at the store's clock when it runs, its now
 * being the clock's when the request came); once the server is stopping (http_stop), end it STORE_UNAVAILABLE instead. p must live in rq->state (freed by rq->state_free, which runs only after the
 * write is over). Returns MHD_YES. */
enum MHD_Result pending_submit(struct request *rq, struct pending *p);

/* A store read that keeps its request's connection suspended until the read is over, run on
 * one of the reader threads (rq->app->readers, server/workers.h) so that a slow read never
 * holds a thread that answers requests (a resumed write, above all). The protocol is
 * pending_submit's: the handler keeps the struct pending_read in its rq->state, sets read,
 * and returns pending_read_submit(); libmicrohttpd calls the handler again once the read is
 * over, and the handler answers from result and what read filled in. */
struct pending_read {
    /* Called on a reader thread with the store: fills the caller's outputs and returns the
     * read's result. r is the struct the handler submitted. */
    enum store_result (*read)(struct pending_read *r, struct store *s);
    enum store_result result; /* read's, or STORE_BUSY when too many reads wait (503),
                               * STORE_UNAVAILABLE when the server is stopping (503) */
    /* private */
    struct work work;
    struct MHD_Connection *conn;
    struct app *app;
};

/* Suspend rq's connection and queue r for a reader thread; when too many reads wait already,
 * end it STORE_BUSY, and once the server is stopping (http_stop), STORE_UNAVAILABLE, without
 * reading. r must live in rq->state, as for pending_submit. Returns MHD_YES. */
enum MHD_Result pending_read_submit(struct request *rq, struct pending_read *r);

/* A new zeroed state of size bytes (at least sizeof (struct pending_read)) that starts with
 * a struct pending_read whose read is `read`, made rq->state (freed by state_free, or by free()
 * when that is NULL). The caller fills the rest and calls pending_read_submit(). Returns the
 * state, or NULL when out of memory. */
void *pending_read_new(struct request *rq, size_t size,
                       enum store_result (*read)(struct pending_read *r, struct store *s),
                       void (*state_free)(void *state));

/* pending_read_new() then pending_read_submit(), for a state that needs nothing more; answers
 * 500 when out of memory. Returns MHD_YES, as pending_read_submit. */
enum MHD_Result pending_read_start(struct request *rq, size_t size,
                                   enum store_result (*read)(struct pending_read *r,
                                                             struct store *s),
                                   void (*state_free)(void *state));

/* The read of every queue's row as of the read (store_queues), which GET /queues, GET /metrics
 * and the answer to a pause share. */
struct queues_read {
    struct pending_read r;    /* first */
    struct queue_stats *rows; /* n of them once the read is STORE_OK; owned */
    size_t n;
};

/* Make q a queues read (nothing owned yet). This function can't fail. */
void queues_read_init(struct queues_read *q);

/* Release what q owns. Accepts NULL. */
void queues_read_clear(struct queues_read *q);

/* Start a queues read as rq->state, as pending_read_start. */
enum MHD_Result queues_read_start(struct request *rq);

#endif
