/* GET /events as Server-Sent Events (../shared/API.md "Events, webhooks and trace context";
 * docs/events.md). A stream is a cursor on the event log: it reads the log on a reader thread
 * (store_events, never under a write), writes what it found to its connection, and parks
 * (suspended, no thread held) until its next read is due. A reader that does not read its
 * socket only stops its own cursor: writers never wait for it, and it catches up from the
 * log when it reads again. No thread per stream: one hub thread resumes the parked ones. */
#ifndef JOBQ_SSE_H
#define JOBQ_SSE_H

#include <stdint.h>

#include <microhttpd.h>

#include "event.h"
#include "request.h"

#define SSE_POLL_MS 200        /* a stream with nothing new reads the log again after this */
#define SSE_KEEPALIVE_MS 15000 /* a comment line when nothing was written for this long */

struct sse_hub;
struct app;

/* Start the hub of app's streams: at most max_streams open at once. Returns NULL when out of
 * memory or when its thread cannot start (logged). */
struct sse_hub *sse_hub_start(struct app *app, int max_streams);

/* End every stream: each writes what it holds and ends, and new ones are refused, so that a
 * draining server is not held up by them (http_quiesce). Thread-safe. Accepts NULL. */
void sse_hub_close(struct sse_hub *hub);

/* Streams open now. Thread-safe. */
int sse_hub_open(struct sse_hub *hub);

/* What the hub's streams did since it started (for /metrics). */
struct sse_counts {
    int open, max;         /* streams open now, and --events-streams */
    uint64_t events, gaps; /* events and gap messages written to streams */
};

/* Fill out from hub (all zero for NULL). Thread-safe; can't fail. */
void sse_hub_counts(struct sse_hub *hub, struct sse_counts *out);

/* Stop the hub's thread and free it; the daemon must be stopped first (no stream is open).
 * Accepts NULL. */
void sse_hub_stop(struct sse_hub *hub);

/* Answer rq with the stream of the events after f->after that pass f (copied; its queues
 * too): first an `event: gap` when events after the cursor were deleted, then each event as
 * `id: <seq>`, `event: <type>`, `data: <the event>`, with `: keep-alive` comments. 503 when
 * the hub holds its most streams already. Returns as a reply_* function. */
enum MHD_Result sse_start(struct request *rq, struct sse_hub *hub, const struct event_filter *f);

#endif
