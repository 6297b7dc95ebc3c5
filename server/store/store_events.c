/* What both backends' event reads share (store.h: struct event_page). */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store.h"
#include "store_events.h"

void event_page_clear(struct event_page *page)
{
    if (!page)
        return;
    job_events_free(page->events, page->n);
    memset(page, 0, sizeof *page);
}

int event_page_add(struct event_page *page, const struct event_filter *f, struct job_event *e)
{
    page->next = e->seq;
    if (!event_filter_match(f, e)) {
        job_event_clear(e);
        return 0;
    }
    struct job_event *v = realloc(page->events, (page->n + 1) * sizeof *v);
    if (!v) {
        log_error("out of memory reading events");
        job_event_clear(e);
        return -1;
    }
    page->events = v;
    v[page->n++] = *e;
    memset(e, 0, sizeof *e);
    return page->n >= (size_t)f->limit ? 1 : 0;
}
