/* Job records to JSON, encoded once per answer. */
#ifndef JOBQ_JOBJSON_H
#define JOBQ_JOBJSON_H

#include <cjson/cJSON.h>

#include "job.h"
#include "store.h"
#include "store_events.h"

/* A growing text buffer for answers written directly, without a cJSON tree (the hot path).
 * After a failed allocation it stays failed: oom is set and nothing more is appended. Start
 * from {0}; the caller frees p. */
struct jtext {
    char *p; /* NUL-terminated when not NULL */
    size_t len, cap;
    int oom;
};

/* Append n bytes of s. */
void jtext_put(struct jtext *t, const char *s, size_t n);

/* Append the job object: every field of the contract's job object in its order, nulls as
 * JSON null, "lease_token" only when with_token is set and the job has one, compact (no
 * whitespace). Borrows j. */
void jtext_job(struct jtext *t, const struct job *j, int with_token);

/* Append [...] with the n jobs of jobs (each as jtext_job). */
void jtext_job_array(struct jtext *t, const struct job *jobs, size_t n, int with_token);

/* Append {"jobs":[...]} with the n jobs of jobs (each as jtext_job). */
void jtext_jobs(struct jtext *t, const struct job *jobs, size_t n, int with_token);

/* Append {"attempts":[...]} with the n attempts of a, oldest first as given: attempt,
 * worker_id, claimed_at, ended_at (null while running), outcome, error_code, error_detail. */
void jtext_attempts(struct jtext *t, const struct job_attempt *a, size_t n);

/* Append {"<name>":[...]} with the n links (id, status, result, queue), and "more" (a boolean)
 * when more is 0 or 1 (-1: no "more"). name is a plain key (nothing to escape). */
void jtext_links(struct jtext *t, const char *name, const struct job_link *links, size_t n,
                 int more);

/* Append the event object: seq, type, at, job (id, queue, status, attempts, fencing_token,
 * error_code, concurrency_key), traceparent; compact. Borrows e. */
void jtext_event(struct jtext *t, const struct job_event *e);

/* Append the JSON page of GET /events: {"events":[...],"next":N}, and "gap":{"after":A,
 * "oldest":M} first when the sweep deleted events after the cursor `after`. */
void jtext_event_page(struct jtext *t, const struct event_page *page, int64_t after);

#endif
