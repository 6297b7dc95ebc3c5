/* GET /events: the event log as Server-Sent Events (sse.h), or one page of it as JSON for
 * clients that poll (Accept: application/json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "handlers.h"
#include "jobjson.h"
#include "parse_events.h"
#include "pending.h"
#include "sse.h"
#include "store_events.h"

/* The repeated `queue` values of the query, borrowed from the connection. */
struct queue_args {
    const char *v[EVENT_QUEUES_MAX + 1]; /* one more: "too many" is told */
    size_t n;
};

static enum MHD_Result collect_queue(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    struct queue_args *q = cls;
    if (strcmp(key, "queue") == 0 && q->n < EVENT_QUEUES_MAX + 1)
        q->v[q->n++] = value ? value : "";
    return MHD_YES;
}

static const char *query(struct request *rq, const char *key)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* The JSON page across its two calls. */
struct events_read {
    struct pending_read r;
    struct event_filter filter; /* its queues point into qbuf: the reader thread does not read
                                 * the connection's memory */
    char qbuf[EVENT_QUEUES_MAX][JOB_QUEUE_MAX + 1];
    struct event_page page;
};

static void events_read_free(void *arg)
{
    struct events_read *er = arg;
    if (!er)
        return;
    event_page_clear(&er->page);
    free(er);
}

static enum store_result events_read(struct pending_read *r, struct store *s)
{
    struct events_read *er = (struct events_read *)r;
    return store_events(s, &er->filter, &er->page);
}

/* 1 when the client asked for the JSON page. */
static int wants_json(struct request *rq)
{
    const char *accept = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Accept");
    return accept && strstr(accept, "application/json") != NULL;
}

enum MHD_Result handle_events(struct request *rq)
{
    struct events_read *er = rq->state;
    if (er) {
        if (er->r.result != STORE_OK)
            return reply_store_error(rq, er->r.result, "the event log");
        struct jtext t = {0};
        jtext_event_page(&t, &er->page, er->filter.after);
        return reply_jtext(rq, MHD_HTTP_OK, &t, NULL);
    }
    struct queue_args q = {.n = 0};
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, collect_queue, &q);
    struct fields f;
    struct jspan none = {"", 0};
    struct event_filter filter;
    fields_init(&f, NULL, none, NULL);
    const char *last = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Last-Event-ID");
    if (parse_events_query(&f, q.v, q.n, query(rq, "job"), query(rq, "types"), last,
                           query(rq, "after"), query(rq, "limit"), &filter) < 0)
        return fields_reply(rq, &f);
    if (!wants_json(rq)) {
        filter.limit = EVENT_PAGE_MAX;
        return sse_start(rq, rq->app->streams, &filter);
    }
    er = pending_read_new(rq, sizeof *er, events_read, events_read_free);
    if (!er)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    er->filter = filter;
    for (size_t i = 0; i < filter.nqueues; i++) {
        snprintf(er->qbuf[i], sizeof er->qbuf[i], "%s", filter.queues[i]);
        er->filter.queues[i] = er->qbuf[i];
    }
    return pending_read_submit(rq, &er->r);
}
