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

void event_log_gauge_set(struct event_log_gauge *g, const struct event_log_seen *seen)
{
    atomic_store(&g->written, seen->written);
    atomic_store(&g->oldest, seen->oldest);
    atomic_store(&g->kept, seen->kept);
    atomic_store(&g->seen, 1);
}

size_t event_log_gauge_metrics(struct event_log_gauge *g, struct store_metric *out, size_t k)
{
    if (!atomic_load(&g->seen) || k + EVENT_LOG_METRICS > STORE_METRICS_MAX)
        return k;
    out[k++] = (struct store_metric){
        "jobq_events_written_total",
        "Events written by every process, as this process's last sweep read it (SQLite: the "
        "newest seq; PostgreSQL: the event table's inserted rows in its statistics).",
        1, (double)atomic_load(&g->written)};
    out[k++] = (struct store_metric){
        "jobq_events_oldest_seq",
        "The oldest seq the event log keeps, as this process's last sweep saw it (0: empty).", 0,
        (double)atomic_load(&g->oldest)};
    out[k++] = (struct store_metric){
        "jobq_events_kept",
        "Events the log keeps, as this process's last sweep saw them (PostgreSQL: the "
        "statistics' estimate).",
        0, (double)atomic_load(&g->kept)};
    return k;
}
