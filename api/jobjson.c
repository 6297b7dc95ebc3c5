/* The contract's job object (see jobjson.h), written directly as text. Integers are printed
 * with PRId64, so int64 values are exact; JSON-text fields are embedded verbatim. */
#include "jobjson.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "store_events.h"

/* ----- direct text ------------------------------------------------------------------------ */

/* Room for n more bytes and the NUL. Returns 0, or -1 (oom set). */
static int reserve(struct jtext *t, size_t n)
{
    if (t->oom)
        return -1;
    if (t->len + n + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + n + 1)
        cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
        t->oom = 1;
        return -1;
    }
    t->p = p;
    t->cap = cap;
    return 0;
}

void jtext_put(struct jtext *t, const char *s, size_t n)
{
    if (reserve(t, n) != 0)
        return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

#define PUT_LIT(t, lit) jtext_put((t), (lit), sizeof(lit) - 1)

static void put_int(struct jtext *t, int64_t v)
{
    char buf[24];
    char *end = buf + sizeof buf, *p = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    jtext_put(t, p, (size_t)(end - p));
}

static void put_opt_int(struct jtext *t, int64_t v)
{
    if (v == JOB_NONE)
        PUT_LIT(t, "null");
    else
        put_int(t, v);
}

/* A JSON string as cJSON escapes it: quote, backslash, \b \f \n \r \t, other control bytes
 * as \u00xx; everything else (UTF-8 included) as is. */
static void put_string(struct jtext *t, const char *s)
{
    if (!s) {
        PUT_LIT(t, "null");
        return;
    }
    size_t n = strlen(s);
    if (reserve(t, 2 + 6 * n) != 0)
        return;
    char *o = t->p + t->len;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c >= 0x20 && *c != '"' && *c != '\\') {
            *o++ = (char)*c;
            continue;
        }
        *o++ = '\\';
        switch (*c) {
        case '"':
        case '\\':
            *o++ = (char)*c;
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        default: {
            static const char hex[] = "0123456789abcdef";
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[*c >> 4];
            *o++ = hex[*c & 15];
        }
        }
    }
    *o++ = '"';
    t->len = (size_t)(o - t->p);
    t->p[t->len] = '\0';
}

static void put_raw(struct jtext *t, const char *text, const char *fallback)
{
    const char *s = text ? text : fallback;
    jtext_put(t, s, strlen(s));
}

void jtext_job(struct jtext *t, const struct job *j, int with_token)
{
    /* The contract's order. */
    PUT_LIT(t, "{\"id\":");
    put_int(t, j->id);
    PUT_LIT(t, ",\"queue\":");
    put_string(t, j->queue);
    PUT_LIT(t, ",\"status\":");
    put_string(t, job_status_name(j->status));
    PUT_LIT(t, ",\"payload\":");
    put_raw(t, j->payload, "null");
    PUT_LIT(t, ",\"priority\":");
    put_int(t, j->priority);
    PUT_LIT(t, ",\"run_at\":");
    put_int(t, j->run_at);
    PUT_LIT(t, ",\"attempts\":");
    put_int(t, j->attempts);
    PUT_LIT(t, ",\"max_attempts\":");
    put_int(t, j->max_attempts);
    PUT_LIT(t, ",\"fencing_token\":");
    put_int(t, j->fencing_token);
    PUT_LIT(t, ",\"max_runtime_seconds\":");
    put_opt_int(t, j->max_runtime_seconds);
    PUT_LIT(t, ",\"requires\":");
    put_raw(t, j->requires, "[]");
    PUT_LIT(t, ",\"idempotency_key\":");
    put_string(t, j->idempotency_key);
    PUT_LIT(t, ",\"created_at\":");
    put_int(t, j->created_at);
    PUT_LIT(t, ",\"claimed_at\":");
    put_opt_int(t, j->claimed_at);
    PUT_LIT(t, ",\"heartbeat_at\":");
    put_opt_int(t, j->heartbeat_at);
    PUT_LIT(t, ",\"lease_expires_at\":");
    put_opt_int(t, j->lease_expires_at);
    PUT_LIT(t, ",\"worker_id\":");
    put_string(t, j->worker_id);
    PUT_LIT(t, ",\"finished_at\":");
    put_opt_int(t, j->finished_at);
    PUT_LIT(t, ",\"result\":");
    put_raw(t, j->result, "null");
    PUT_LIT(t, ",\"progress\":");
    put_raw(t, j->progress, "null");
    PUT_LIT(t, ",\"error_code\":");
    put_string(t, j->error_code);
    PUT_LIT(t, ",\"error_detail\":");
    put_raw(t, j->error_detail, "null");
    PUT_LIT(t, ",\"concurrency_key\":");
    put_string(t, j->concurrency_key);
    PUT_LIT(t, ",\"expires_at\":");
    put_opt_int(t, j->expires_at);
    PUT_LIT(t, ",\"dedup\":");
    if (j->dedup_key && j->dedup_mode != DEDUP_NONE) {
        PUT_LIT(t, "{\"key\":");
        put_string(t, j->dedup_key);
        PUT_LIT(t, ",\"mode\":");
        put_string(t, dedup_mode_name(j->dedup_mode));
        PUT_LIT(t, ",\"seconds\":");
        put_opt_int(t, j->dedup_seconds);
        PUT_LIT(t, "}");
    } else {
        PUT_LIT(t, "null");
    }
    PUT_LIT(t, ",\"depends_on\":");
    put_raw(t, j->depends_on, "[]");
    PUT_LIT(t, ",\"on_dependency_failure\":");
    put_string(t, job_dep_mode_name(j->on_dependency_failure));
    PUT_LIT(t, ",\"traceparent\":");
    put_string(t, j->traceparent);
    PUT_LIT(t, ",\"tracestate\":");
    put_string(t, j->tracestate);
    if (with_token && j->lease_token) {
        PUT_LIT(t, ",\"lease_token\":");
        put_string(t, j->lease_token);
    }
    PUT_LIT(t, "}");
}

void jtext_job_array(struct jtext *t, const struct job *jobs, size_t n, int with_token)
{
    PUT_LIT(t, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            PUT_LIT(t, ",");
        jtext_job(t, &jobs[i], with_token);
    }
    PUT_LIT(t, "]");
}

void jtext_jobs(struct jtext *t, const struct job *jobs, size_t n, int with_token)
{
    PUT_LIT(t, "{\"jobs\":");
    jtext_job_array(t, jobs, n, with_token);
    PUT_LIT(t, "}");
}

void jtext_attempts(struct jtext *t, const struct job_attempt *a, size_t n)
{
    PUT_LIT(t, "{\"attempts\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            PUT_LIT(t, ",");
        PUT_LIT(t, "{\"attempt\":");
        put_int(t, a[i].attempt);
        PUT_LIT(t, ",\"worker_id\":");
        put_string(t, a[i].worker_id);
        PUT_LIT(t, ",\"claimed_at\":");
        put_int(t, a[i].claimed_at);
        PUT_LIT(t, ",\"ended_at\":");
        put_opt_int(t, a[i].ended_at);
        PUT_LIT(t, ",\"outcome\":");
        put_string(t, attempt_outcome_name(a[i].outcome));
        PUT_LIT(t, ",\"error_code\":");
        put_string(t, a[i].error_code);
        PUT_LIT(t, ",\"error_detail\":");
        put_raw(t, a[i].error_detail, "null");
        PUT_LIT(t, "}");
    }
    PUT_LIT(t, "]}");
}

void jtext_links(struct jtext *t, const char *name, const struct job_link *links, size_t n,
                 int more)
{
    PUT_LIT(t, "{\"");
    jtext_put(t, name, strlen(name));
    PUT_LIT(t, "\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            PUT_LIT(t, ",");
        PUT_LIT(t, "{\"id\":");
        put_int(t, links[i].id);
        PUT_LIT(t, ",\"status\":");
        put_string(t, job_status_name(links[i].status));
        PUT_LIT(t, ",\"result\":");
        put_raw(t, links[i].result, "null");
        PUT_LIT(t, ",\"queue\":");
        put_string(t, links[i].queue);
        PUT_LIT(t, "}");
    }
    PUT_LIT(t, "]");
    if (more >= 0) {
        PUT_LIT(t, ",\"more\":");
        if (more)
            PUT_LIT(t, "true");
        else
            PUT_LIT(t, "false");
    }
    PUT_LIT(t, "}");
}

void jtext_event(struct jtext *t, const struct job_event *e)
{
    PUT_LIT(t, "{\"seq\":");
    put_int(t, e->seq);
    PUT_LIT(t, ",\"type\":");
    put_string(t, job_event_name(e->type));
    PUT_LIT(t, ",\"at\":");
    put_int(t, e->at);
    PUT_LIT(t, ",\"job\":{\"id\":");
    put_int(t, e->job_id);
    PUT_LIT(t, ",\"queue\":");
    put_string(t, e->queue);
    PUT_LIT(t, ",\"status\":");
    put_string(t, job_status_name(e->status));
    PUT_LIT(t, ",\"attempts\":");
    put_int(t, e->attempts);
    PUT_LIT(t, ",\"fencing_token\":");
    put_int(t, e->fencing_token);
    PUT_LIT(t, ",\"error_code\":");
    put_string(t, e->error_code);
    PUT_LIT(t, ",\"concurrency_key\":");
    put_string(t, e->concurrency_key);
    PUT_LIT(t, "},\"traceparent\":");
    put_string(t, e->traceparent);
    PUT_LIT(t, "}");
}

void jtext_event_page(struct jtext *t, const struct event_page *page, int64_t after)
{
    PUT_LIT(t, "{");
    if (after < page->pruned_through) {
        PUT_LIT(t, "\"gap\":{\"after\":");
        put_int(t, after);
        PUT_LIT(t, ",\"oldest\":");
        put_int(t, page->n > 0 ? page->events[0].seq : page->pruned_through + 1);
        PUT_LIT(t, "},");
    }
    PUT_LIT(t, "\"events\":[");
    for (size_t i = 0; i < page->n; i++) {
        if (i)
            PUT_LIT(t, ",");
        jtext_event(t, &page->events[i]);
    }
    PUT_LIT(t, "],\"next\":");
    put_int(t, page->next > page->pruned_through ? page->next : page->pruned_through);
    PUT_LIT(t, "}");
}
