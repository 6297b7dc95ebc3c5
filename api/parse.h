/* Request bodies and query strings to the store's request shapes, with every limit of the
 * contract checked. Like fields.h these never answer: on failure they return -1 with the
 * fields error set (the message names the field), so they are testable without a
 * connection. Strings in the results are borrowed from the parsed body unless said owned. */
#ifndef JOBQ_PARSE_H
#define JOBQ_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "fields.h"
#include "job.h"

/* A lease_token of more bytes is invalid_request. Tokens are JOB_TOKEN_LEN characters: a
 * longer one cannot match, but up to this many it is read and answered lease_lost. */
#define PARSE_TOKEN_MAX 256

/* Memory owned behind a job_spec. */
struct spec_buf {
    char *payload;
    char *requires;
    struct job_dep *deps; /* spec->deps: ndeps entries (malloc'd), NULL when none */
    /* Parallel to deps: the ref a string entry gave (borrowed from the parsed body; its
     * deps[k] is {0, -1} until parse_batch_deps() resolves it), NULL for an id entry. NULL
     * when no entry is a string. */
    const char **dep_refs;
    const char *ref; /* a batch element's ref (borrowed), NULL when none */
};

/* Read a POST /jobs body (or one batch element) into spec: queue (default "default"),
 * payload (required; a present null is a valid payload), priority, run_at (below
 * JOB_RUN_AT_MAX) or delay_seconds (kept as spec->delay with run_at JOB_NONE: the store resolves it on
 * its own clock; neither: delay 0), max_attempts (default 5), max_runtime_seconds,
 * requires, idempotency_key, concurrency_key, expires_at or expires_in_seconds (kept as
 * spec->expires_in: resolved on the store's clock), depends_on (at most JOB_DEPS_MAX entries:
 * job ids, positive int64 integers, and refs, strings of 1..JOB_REF_MAX bytes, which only
 * parse_batch_deps() accepts; a repeated entry counts once) and on_dependency_failure
 * ("cancel", the default, or "run"), traceparent and tracestate (W3C trace context, trace.h;
 * a tracestate only with a traceparent). Returns 0, or -1 with f's error set. buf receives the
 * owned texts (release with spec_buf_clear(), also after a failure). */
int parse_job_spec(struct fields *f, struct job_spec *spec, struct spec_buf *buf);

/* The checks of a spec that need a clock: an expires_at that is not after now (the
 * caller's clock: a bound on what a client may ask, not a time the store keeps) is
 * invalid_request. Returns 0, or -1 with f's error set. */
int parse_spec_times(struct fields *f, const struct job_spec *spec, int64_t now);

/* Release the texts of buf and zero it. Accepts NULL. */
void spec_buf_clear(struct spec_buf *buf);

/* A POST /claim body. */
struct claim_args {
    const char *worker_id;
    const char *queues[JOB_QUEUES_MAX];
    size_t nqueues;
    char *capabilities;    /* owned compact JSON array text, NULL when none */
    int64_t lease_seconds; /* default 30 */
    int max_jobs;          /* default 1 */
    int64_t wait_seconds;  /* default 0 */
};

/* Read a POST /claim body: worker_id (required), queue or queues (not both; default
 * ["default"]), lease_seconds, max_jobs, wait_seconds, capabilities. Returns 0, or -1 with
 * f's error set. Release with claim_args_clear() in both cases. */
int parse_claim(struct fields *f, struct claim_args *c);

/* Release what c owns and zero it. Accepts NULL. */
void claim_args_clear(struct claim_args *c);

/* POST /jobs/{id}/heartbeat, /complete and /fail bodies. */
struct lease_args {
    const char *lease_token; /* required */
    int64_t lease_seconds;   /* heartbeat: 0 when absent (the claim's length) */
    char *json;              /* owned: heartbeat progress, complete result, fail error_detail;
                                 NULL when absent or null */
    struct fail_req fail;    /* fail only; fail.error_detail points at json */
    int64_t seconds;         /* snooze: 0..JOB_DELAY_MAX (required) */
    int pause_key;           /* snooze: 0 when absent */
};

/* Read a heartbeat body (lease_token, lease_seconds, progress). */
int parse_heartbeat(struct fields *f, struct lease_args *a);

/* Read a complete body (lease_token, result). */
int parse_complete(struct fields *f, struct lease_args *a);

/* Read a fail body (lease_token, error_code, error_detail, retry default true,
 * retry_in_seconds; -1 when absent). */
int parse_fail(struct fields *f, struct lease_args *a);

/* Read a snooze body (lease_token, seconds required, pause_key default false). */
int parse_snooze(struct fields *f, struct lease_args *a);

/* Release what a owns and zero it. Accepts NULL. */
void lease_args_clear(struct lease_args *a);

/* Read GET /jobs query values (each NULL when absent): queue, status (an API status name),
 * limit (1..JOB_LIST_MAX, default 100) and cursor (from cursor_format()). Returns 0, or -1
 * with f's error set (fields_init() it first; no body is read). queue is borrowed. */
int parse_list_query(struct fields *f, const char *queue, const char *status, const char *limit,
                     const char *cursor, struct list_filter *out);

/* The opaque, URL-safe cursor that continues a listing after job id `after` (> 0):
 * written to buf (at least 24 bytes). */
void cursor_format(int64_t after, char *buf, size_t len);

/* Parse a cursor from cursor_format(). Returns 0 and sets *after, or -1. */
int cursor_parse(const char *s, int64_t *after);

#endif
