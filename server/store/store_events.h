/* The event log's read side of the store (store.h): a page of events and how a backend fills
 * it (store_events.c), and store_events. docs/events.md says what is guaranteed. */
#ifndef JOBQ_STORE_EVENTS_H
#define JOBQ_STORE_EVENTS_H

#include "event.h"
#include "store.h"

/* One page of the event log (store_events). */
struct event_page {
    struct job_event *events; /* owned: release with event_page_clear() */
    size_t n;
    int64_t next; /* the cursor to read on from: the last seq looked at (f->after when none) */
    int64_t pruned_through; /* the highest seq the sweep deleted: a cursor below it missed
                             * events (a gap) */
};

/* Release what page owns and zero it. Accepts NULL. */
void event_page_clear(struct event_page *page);

/* Add event e (consumed: its strings move into the page, e is zeroed) to page when it passes
 * f, and move page->next to it. Returns 1 when the page now holds f->limit events, 0 when it
 * takes more, -1 when memory ran out (logged; e is cleared). */
int event_page_add(struct event_page *page, const struct event_filter *f, struct job_event *e);

/* The events after f->after that pass f, in seq order: at most f->limit of them, among at
 * most EVENT_SCAN_MAX looked at. Only events whose transaction committed, and never one
 * before an event that may still commit with a lower seq: a reader that goes on from
 * out->next never misses one nor sees one twice (docs/events.md). STORE_OK (out filled, the
 * caller releases it with event_page_clear) or a failure. Never waits for a writer. */
static inline enum store_result store_events(struct store *s, const struct event_filter *f,
                                             struct event_page *out)
{
    return s->ops->events(s, f, out);
}

#endif
