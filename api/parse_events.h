/* The query of GET /events (../shared/API.md "Events, webhooks and trace context") read into
 * an event filter. Like parse.h it never answers: on failure it returns -1 with the fields
 * error set (invalid_request naming the parameter). */
#ifndef JOBQ_PARSE_EVENTS_H
#define JOBQ_PARSE_EVENTS_H

#include <stddef.h>

#include "event.h"
#include "fields.h"

#define EVENT_PAGE_DEFAULT 100 /* limit of a JSON page when none is given */
#define EVENT_TYPES_MAX 1000   /* bytes of the types parameter */
/* What types may be (openapi.yaml says it so): names of job_event_name, comma-separated. */
#define EVENT_TYPE_NAMES_RE                                                                        \
    "job\\.(created|blocked|released|claimed|succeeded|failed|requeued|retried|snoozed|"           \
    "cancelled)"
#define EVENT_TYPES_PATTERN "^" EVENT_TYPE_NAMES_RE "(," EVENT_TYPE_NAMES_RE ")*$"

/* The query's values (each NULL when absent; queues[0..nqueues) the repeated `queue`
 * values): queue (queue names, at most EVENT_QUEUES_MAX), job (a job id), types (event type
 * names, comma-separated), the cursor (the Last-Event-ID header, else `after`: a seq, 0 or
 * more) and limit (1..EVENT_PAGE_MAX, default EVENT_PAGE_DEFAULT). A value that names
 * nothing (an empty one, an unknown type, a job id that is not one) is invalid_request.
 * Returns 0 with out filled (queues borrowed), or -1 with f's error set (fields_init() it
 * first). */
int parse_events_query(struct fields *f, const char *const *queues, size_t nqueues, const char *job,
                       const char *types, const char *last_event_id, const char *after,
                       const char *limit, struct event_filter *out);

#endif
