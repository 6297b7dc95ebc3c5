/* GET /events as Server-Sent Events (see sse.h). */
#include "sse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "clock.h"
#include "jobjson.h"
#include "log.h"
#include "pending.h"
#include "reply.h"
#include "store_events.h"
#include "workers.h"

#define HUB_TICK_MS 50     /* how often the hub looks for streams whose next read is due */
#define STREAM_BLOCK 16384 /* bytes libmicrohttpd asks a stream for at most */

struct sse_stream {
    struct work work; /* its read, on a reader thread */
    struct sse_hub *hub;
    struct app *app;
    struct MHD_Connection *conn;
    struct event_filter filter; /* filter.after is the cursor; its queues point into qbuf */
    char qbuf[EVENT_QUEUES_MAX][JOB_QUEUE_MAX + 1];
    struct jtext out; /* what is to be written, from `sent` on */
    size_t sent;
    int64_t read_at_ms;      /* monotonic: when the next read is due */
    int64_t keepalive_at_ms; /* monotonic: when a keep-alive is due if nothing was written */
    int ended;               /* the server stops: end the stream */
    struct sse_stream *next; /* in the hub's parked list */
};

struct sse_hub {
    struct app *app;
    int max_streams;
    atomic_int open;
    atomic_int closing;          /* 1: the server stops accepting: every stream ends */
    atomic_uint_fast64_t events; /* written to streams (sse_hub_counts) */
    atomic_uint_fast64_t gaps;
    pthread_mutex_t mu;
    struct sse_stream *parked; /* suspended until their read_at_ms */
    int stop;
    pthread_t thread;
};

static int suspend_counted(struct sse_stream *s)
{
    return pending_suspend(s->conn, s->app);
}

/* Append one SSE message: `id:` when seq > 0, `event:`, then data (JSON text, one line). */
static void put_message(struct jtext *t, int64_t seq, const char *type, const struct jtext *data)
{
    char head[96];
    int n = seq > 0
                ? snprintf(head, sizeof head, "id: %lld\nevent: %s\ndata: ", (long long)seq, type)
                : snprintf(head, sizeof head, "event: %s\ndata: ", type);
    jtext_put(t, head, (size_t)n);
    jtext_put(t, data->p ? data->p : "null", data->p ? data->len : 4);
    jtext_put(t, "\n\n", 2);
}

/* What one read of the log gives the stream: a gap when the cursor is below what the sweep
 * deleted (the cursor then moves past it), then the events. */
static void put_page(struct sse_stream *s, const struct event_page *page)
{
    struct jtext data = {0};
    if (s->filter.after < page->pruned_through) {
        char gap[96];
        int64_t oldest = page->n > 0 ? page->events[0].seq : page->pruned_through + 1;
        int n = snprintf(gap, sizeof gap, "{\"after\":%lld,\"oldest\":%lld}",
                         (long long)s->filter.after, (long long)oldest);
        data.len = 0;
        jtext_put(&data, gap, (size_t)n);
        put_message(&s->out, 0, "gap", &data);
        atomic_fetch_add(&s->hub->gaps, 1);
    }
    atomic_fetch_add(&s->hub->events, page->n);
    for (size_t i = 0; i < page->n; i++) {
        data.len = 0;
        jtext_event(&data, &page->events[i]);
        put_message(&s->out, page->events[i].seq, job_event_name(page->events[i].type), &data);
    }
    free(data.p);
    int64_t next = page->next > page->pruned_through ? page->next : page->pruned_through;
    if (next > s->filter.after)
        s->filter.after = next;
}

/* On a reader thread (or the thread that gave up on the read). */
static void read_run(struct work *w, int abandoned)
{
    struct sse_stream *s = (struct sse_stream *)((char *)w - offsetof(struct sse_stream, work));
    struct MHD_Connection *conn = s->conn;
    struct app *app = s->app;
    int64_t now = clock_mono_ms();
    if (abandoned) {
        s->ended = 1;
    } else {
        struct event_page page;
        int64_t before = s->filter.after;
        enum store_result r = store_events(app->store, &s->filter, &page);
        if (r == STORE_OK) {
            put_page(s, &page);
            event_page_clear(&page);
        }
        /* More may be there when the cursor moved: read again at once. */
        s->read_at_ms = r == STORE_OK && s->filter.after != before ? now : now + SSE_POLL_MS;
        if (r != STORE_OK)
            s->read_at_ms = now + 1000; /* the store is failing: the stream waits and retries */
    }
    if (s->out.len == 0 && now >= s->keepalive_at_ms)
        jtext_put(&s->out, ": keep-alive\n\n", 14);
    if (s->out.len > 0)
        s->keepalive_at_ms = now + SSE_KEEPALIVE_MS;
    pending_resume(conn, app);
}

/* Park s (its connection suspended) until its read is due. */
static void park(struct sse_stream *s)
{
    struct sse_hub *hub = s->hub;
    if (suspend_counted(s)) {
        s->ended = 1;
        pending_resume(s->conn, s->app);
        return;
    }
    pthread_mutex_lock(&hub->mu);
    s->next = hub->parked;
    hub->parked = s; /* a stream parked after closing is resumed at the hub's next tick */
    pthread_mutex_unlock(&hub->mu);
}

/* Start a read of s on a reader thread. */
static void start_read(struct sse_stream *s)
{
    if (suspend_counted(s)) {
        read_run(&s->work, 1);
        return;
    }
    if (workers_submit(s->app->readers, &s->work) != 0) {
        s->read_at_ms = clock_mono_ms() + SSE_POLL_MS; /* the readers are full: later */
        pending_resume(s->conn, s->app);
    }
}

/* libmicrohttpd's content reader, on the connection's thread while it is not suspended. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct sse_stream *s = cls;
    if (s->sent < s->out.len) {
        size_t n = s->out.len - s->sent;
        if (n > max)
            n = max;
        memcpy(buf, s->out.p + s->sent, n);
        s->sent += n;
        if (s->sent == s->out.len)
            s->sent = s->out.len = 0;
        return (ssize_t)n;
    }
    if (s->out.oom) {
        log_error("out of memory writing an event stream");
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (s->ended || atomic_load(&s->hub->closing) || atomic_load(&s->app->refuse_calls))
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (clock_mono_ms() >= s->read_at_ms)
        start_read(s);
    else
        park(s);
    return 0;
}

static void stream_free(void *cls)
{
    struct sse_stream *s = cls;
    atomic_fetch_sub(&s->hub->open, 1);
    free(s->out.p);
    free(s);
}

/* The hub's thread: resume the parked streams whose read is due (all of them once the server
 * stops). */
static void *hub_main(void *arg)
{
    struct sse_hub *hub = arg;
    for (;;) {
        pthread_mutex_lock(&hub->mu);
        int stop = hub->stop;
        int stopping = atomic_load(&hub->closing) || atomic_load(&hub->app->refuse_calls);
        int64_t now = clock_mono_ms();
        struct sse_stream *due = NULL, **p = &hub->parked;
        while (*p) {
            struct sse_stream *s = *p;
            if (stop || stopping || s->read_at_ms <= now) {
                *p = s->next;
                s->next = due;
                due = s;
            } else {
                p = &s->next;
            }
        }
        pthread_mutex_unlock(&hub->mu);
        while (due) {
            struct sse_stream *s = due;
            due = s->next;
            pending_resume(s->conn, s->app);
        }
        if (stop)
            return NULL;
        nanosleep(&(struct timespec){0, HUB_TICK_MS * 1000000L}, NULL);
    }
}

struct sse_hub *sse_hub_start(struct app *app, int max_streams)
{
    struct sse_hub *hub = calloc(1, sizeof *hub);
    if (!hub) {
        log_error("out of memory starting the event streams");
        return NULL;
    }
    hub->app = app;
    hub->max_streams = max_streams;
    pthread_mutex_init(&hub->mu, NULL);
    if (pthread_create(&hub->thread, NULL, hub_main, hub) != 0) {
        log_error("cannot start the event streams' thread");
        pthread_mutex_destroy(&hub->mu);
        free(hub);
        return NULL;
    }
    return hub;
}

void sse_hub_close(struct sse_hub *hub)
{
    if (hub)
        atomic_store(&hub->closing, 1);
}

int sse_hub_open(struct sse_hub *hub)
{
    return hub ? atomic_load(&hub->open) : 0;
}

void sse_hub_counts(struct sse_hub *hub, struct sse_counts *out)
{
    *out = (struct sse_counts){0};
    if (!hub)
        return;
    out->open = atomic_load(&hub->open);
    out->max = hub->max_streams;
    out->events = atomic_load(&hub->events);
    out->gaps = atomic_load(&hub->gaps);
}

void sse_hub_stop(struct sse_hub *hub)
{
    if (!hub)
        return;
    pthread_mutex_lock(&hub->mu);
    hub->stop = 1;
    pthread_mutex_unlock(&hub->mu);
    pthread_join(hub->thread, NULL);
    pthread_mutex_destroy(&hub->mu);
    free(hub);
}

enum MHD_Result sse_start(struct request *rq, struct sse_hub *hub, const struct event_filter *f)
{
    if (atomic_load(&hub->closing))
        return reply_error(rq, ERR_UNAVAILABLE, "the server is stopping");
    if (atomic_fetch_add(&hub->open, 1) >= hub->max_streams) {
        atomic_fetch_sub(&hub->open, 1);
        return reply_error(rq, ERR_UNAVAILABLE,
                           "%d event streams are open already (--events-streams)",
                           hub->max_streams);
    }
    struct sse_stream *s = calloc(1, sizeof *s);
    if (!s) {
        atomic_fetch_sub(&hub->open, 1);
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    }
    s->hub = hub;
    s->app = rq->app;
    s->conn = rq->conn;
    s->work.run = read_run;
    s->filter = *f;
    for (size_t i = 0; i < f->nqueues; i++) {
        snprintf(s->qbuf[i], sizeof s->qbuf[i], "%s", f->queues[i]);
        s->filter.queues[i] = s->qbuf[i];
    }
    int64_t now = clock_mono_ms();
    s->read_at_ms = now;
    s->keepalive_at_ms = now + SSE_KEEPALIVE_MS;
    /* A first comment: the client sees the stream open before any event. */
    jtext_put(&s->out, ": jobq events\n\n", 15);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
                                                                  stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return reply_error(rq, ERR_INTERNAL, "cannot create the event stream");
    }
    return reply_response(rq, MHD_HTTP_OK, resp, "text/event-stream", "Cache-Control", "no-cache",
                          "X-Accel-Buffering", "no", NULL);
}
