/* Request bodies and query strings to the store's request shapes (see parse.h). */
#include "parse.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "depend.h"
#include "expiry.h"

#define DEFAULT_QUEUE "default"
#define DEFAULT_MAX_ATTEMPTS 5
#define DEFAULT_LEASE_SECONDS 30
#define DEFAULT_LIST_LIMIT 100

static const char *const default_queues[] = {DEFAULT_QUEUE};

/* expires_at (1..JOB_RUN_AT_MAX) and expires_in_seconds (1..EXPIRY_IN_MAX) as given;
 * parse_spec_times checks the rest (expiry_check). */
static int parse_expiry(struct fields *f, struct job_spec *spec)
{
    if (fields_int(f, "expires_at", 1, JOB_RUN_AT_MAX, &spec->expires_at) < 0)
        return -1;
    return fields_int(f, "expires_in_seconds", 1, EXPIRY_IN_MAX, &spec->expires_in) < 0 ? -1 : 0;
}

/* dedup: {"key", "mode", "seconds"}, checked by dedup_check. A debounce decides when the job
 * is due: with run_at or delay_seconds it is invalid_request. */
static int parse_dedup(struct fields *f, struct job_spec *spec)
{
    struct fields d;
    int r = fields_object(f, "dedup", &d);
    if (r <= 0)
        return r; /* absent, or f's error set */
    const char *key = NULL, *mode = NULL;
    int64_t seconds = JOB_NONE;
    if (fields_string(&d, "key", 1, JOB_IDENT_MAX, &key) < 0 ||
        fields_string(&d, "mode", 1, 16, &mode) < 0 ||
        fields_int(&d, "seconds", 0, DEDUP_SECONDS_MAX, &seconds) < 0) {
        *f = d;
        return -1;
    }
    struct dedup checked;
    const char *bad = dedup_check(key, key ? strlen(key) : 0, mode, seconds, &checked);
    if (bad)
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s is %s", f->prefix, bad,
                           strcmp(bad, "dedup.mode") == 0
                               ? "required: one of active, window, debounce"
                           : strcmp(bad, "dedup.key") == 0
                               ? "required: 1 to 200 bytes"
                               : "required for window (1 to 31536000) and debounce (0 to "
                                 "31536000)");
    if (checked.mode == DEDUP_DEBOUNCE && (spec->run_at != JOB_NONE || spec->delay != 0))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%sdedup with mode debounce decides when the job is due: no %srun_at "
                           "or %sdelay_seconds with it",
                           f->prefix, f->prefix, f->prefix);
    spec->dedup_key = checked.key;
    spec->dedup_mode = checked.mode;
    spec->dedup_seconds = checked.seconds;
    return 1;
}

/* ----- workflows ------------------------------------------------------------------------- */

/* One entry's key for sorting: the id, or minus one more than the element index. */
struct dep_key {
    int64_t key;
    size_t pos;
};

static int cmp_dep_key(const void *a, const void *b)
{
    const struct dep_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Drop the repeated entries of deps[0..*n) (every entry resolved), keeping the first of each in
 * its place. Returns 0, or -1 when out of memory. */
static int deps_dedupe(struct job_dep *deps, size_t *n)
{
    if (*n < 2)
        return 0;
    struct dep_key *k = malloc(*n * sizeof *k);
    unsigned char *drop = calloc(*n, 1);
    if (!k || !drop) {
        free(k);
        free(drop);
        return -1;
    }
    for (size_t i = 0; i < *n; i++)
        k[i] = (struct dep_key){deps[i].id > 0 ? deps[i].id : -1 - (int64_t)deps[i].index, i};
    qsort(k, *n, sizeof *k, cmp_dep_key);
    for (size_t i = 1; i < *n; i++)
        drop[k[i].pos] = k[i].key == k[i - 1].key;
    size_t out = 0;
    for (size_t i = 0; i < *n; i++) {
        if (!drop[i])
            deps[out++] = deps[i];
    }
    *n = out;
    free(k);
    free(drop);
    return 0;
}

/* A ref for a message: at most 48 bytes of it, cut on a character boundary, into buf. */
static const char *ref_shown(const char *ref, char buf[64])
{
    size_t n = strlen(ref);
    if (n > 48) {
        n = 48;
        while (n > 0 && ((unsigned char)ref[n] & 0xC0) == 0x80)
            n--;
    }
    snprintf(buf, 64, "%.*s%s", (int)n, ref, n < strlen(ref) ? "..." : "");
    return buf;
}

/* depends_on: ids and refs (see parse_job_spec). */
static int parse_deps(struct fields *f, struct job_spec *spec, struct spec_buf *buf)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(f->obj, "depends_on");
    if (!item || cJSON_IsNull(item))
        return 0;
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) > JOB_DEPS_MAX)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%sdepends_on must be an array of at most %d job ids (or refs of "
                           "elements of the same batch)",
                           f->prefix, JOB_DEPS_MAX);
    size_t count = (size_t)cJSON_GetArraySize(item);
    if (count == 0)
        return 0;
    struct jspan text;
    if (json_member(f->span, "depends_on", &text) && json_has_nul(text))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%sdepends_on must not contain a NUL character (\\u0000)", f->prefix);
    if (!(buf->deps = calloc(count, sizeof *buf->deps)))
        return fields_fail(f, ERR_INTERNAL, "out of memory reading %sdepends_on", f->prefix);
    size_t k = 0;
    const cJSON *el;
    cJSON_ArrayForEach(el, item)
    {
        double d = cJSON_IsNumber(el) ? el->valuedouble : NAN;
        if (cJSON_IsString(el) && el->valuestring && strlen(el->valuestring) >= 1 &&
            strlen(el->valuestring) <= JOB_REF_MAX) {
            if (!buf->dep_refs && !(buf->dep_refs = calloc(count, sizeof *buf->dep_refs)))
                return fields_fail(f, ERR_INTERNAL, "out of memory reading %sdepends_on",
                                   f->prefix);
            buf->dep_refs[k] = el->valuestring;
            buf->deps[k++] = (struct job_dep){0, -1};
        } else if (isfinite(d) && d == floor(d) && d >= 1 && d < 9223372036854775808.0) {
            buf->deps[k++] = (struct job_dep){(int64_t)d, 0};
        } else {
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "%sdepends_on[%zu] must be a job id (an integer from 1) or the ref "
                               "of an element of the same batch (1 to %d bytes)",
                               f->prefix, k, JOB_REF_MAX);
        }
    }
    spec->deps = buf->deps;
    spec->ndeps = k;
    if (!buf->dep_refs && deps_dedupe(buf->deps, &spec->ndeps) < 0)
        return fields_fail(f, ERR_INTERNAL, "out of memory reading %sdepends_on", f->prefix);
    return 1;
}

/* depends_on and on_dependency_failure. */
static int parse_workflow(struct fields *f, struct job_spec *spec, struct spec_buf *buf)
{
    if (parse_deps(f, spec, buf) < 0)
        return -1;
    const char *mode = NULL;
    int r = fields_string(f, "on_dependency_failure", 1, 16, &mode);
    if (r < 0 || (r > 0 && job_dep_mode_parse(mode, &spec->on_dependency_failure) < 0))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%son_dependency_failure must be \"cancel\" or \"run\"", f->prefix);
    return 0;
}

int parse_batch_ref(struct fields *f, struct spec_buf *buf)
{
    return fields_string(f, "ref", 1, JOB_REF_MAX, &buf->ref) < 0 ? -1 : 0;
}

int parse_single_deps(struct fields *f, const struct job_spec *spec, const struct spec_buf *buf)
{
    for (size_t k = 0; buf->dep_refs && k < spec->ndeps; k++) {
        if (buf->dep_refs[k])
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "depends_on[%zu] must be a job id: a ref (a string) names an "
                               "element of the same POST /jobs/batch",
                               k);
    }
    return 0;
}

/* One element's ref, for the sorted lookup. */
struct ref_at {
    const char *ref;
    size_t index;
};

static int cmp_ref_at(const void *a, const void *b)
{
    const struct ref_at *x = a, *y = b;
    int c = strcmp(x->ref, y->ref);
    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sort the refs of the n elements into refs (*nrefs of them); a duplicate ref is
 * invalid_request naming the later element of the first pair. */
static int batch_refs(struct fields *f, const struct spec_buf *bufs, size_t n, struct ref_at *refs,
                      size_t *nrefs)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].ref)
            refs[k++] = (struct ref_at){bufs[i].ref, i};
    }
    qsort(refs, k, sizeof *refs, cmp_ref_at);
    size_t bad = k;
    for (size_t i = 1; i < k; i++) {
        if (strcmp(refs[i].ref, refs[i - 1].ref) == 0 &&
            (bad == k || refs[i].index < refs[bad].index))
            bad = i;
    }
    *nrefs = k;
    if (bad == k)
        return 0;
    char shown[64];
    return fields_fail(f, ERR_INVALID_REQUEST, "jobs[%zu].ref: \"%s\" is also jobs[%zu].ref",
                       refs[bad].index, ref_shown(refs[bad].ref, shown), refs[bad - 1].index);
}

int parse_batch_deps(struct fields *f, struct job_spec *specs, struct spec_buf *bufs, size_t n)
{
    struct ref_at *refs = malloc((n ? n : 1) * sizeof *refs);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    size_t nrefs = 0;
    int r = -1;
    if (!refs || !order) {
        fields_fail(f, ERR_INTERNAL, "out of memory reading the batch");
        goto out;
    }
    if (batch_refs(f, bufs, n, refs, &nrefs) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; bufs[i].dep_refs && d < specs[i].ndeps; d++) {
            if (!bufs[i].dep_refs[d])
                continue;
            struct ref_at key = {bufs[i].dep_refs[d], 0};
            size_t lo = 0, hi = nrefs; /* the first ref >= key */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(refs[mid].ref, key.ref) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == nrefs || strcmp(refs[lo].ref, key.ref) != 0) {
                char shown[64];
                fields_fail(f, ERR_INVALID_REQUEST,
                            "jobs[%zu].depends_on[%zu]: no element of the batch has ref \"%s\"", i,
                            d, ref_shown(key.ref, shown));
                goto out;
            }
            bufs[i].deps[d].index = (int32_t)refs[lo].index;
        }
        if (deps_dedupe(bufs[i].deps, &specs[i].ndeps) < 0) {
            fields_fail(f, ERR_INTERNAL, "out of memory reading the batch");
            goto out;
        }
    }
    long cycle = depend_order(specs, n, order);
    if (cycle == -2)
        fields_fail(f, ERR_INTERNAL, "out of memory reading the batch");
    else if (cycle >= 0)
        fields_fail(f, ERR_INVALID_REQUEST,
                    "jobs[%ld].depends_on: a cycle (the element depends on itself through the "
                    "batch)",
                    cycle);
    else
        r = 0;
out:
    free(refs);
    free(order);
    return r;
}

int parse_spec_times(struct fields *f, const struct job_spec *spec, int64_t now)
{
    const char *bad = expiry_check(spec->expires_at > 0 ? spec->expires_at : JOB_NONE,
                                   spec->expires_in > 0 ? spec->expires_in : JOB_NONE, now);
    if (!bad)
        return 0;
    if (strcmp(bad, "expires_at") == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%sexpires_at must be after now (%" PRId64 ")",
                           f->prefix, now);
    if (strcmp(bad, "expires_in_seconds") == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%sexpires_in_seconds must be 1 to %d",
                           f->prefix, EXPIRY_IN_MAX);
    return fields_fail(f, ERR_INVALID_REQUEST,
                       "%sexpires_at and %sexpires_in_seconds cannot be given together", f->prefix,
                       f->prefix);
}

int parse_job_spec(struct fields *f, struct job_spec *spec, struct spec_buf *buf)
{
    int64_t v;
    int r;
    memset(spec, 0, sizeof *spec);
    memset(buf, 0, sizeof *buf);
    spec->queue = DEFAULT_QUEUE;
    spec->run_at = JOB_NONE; /* due at the store's now (+ delay_seconds) */
    spec->max_attempts = DEFAULT_MAX_ATTEMPTS;
    spec->max_runtime_seconds = JOB_NONE;

    if (fields_queue(f, "queue", &spec->queue) < 0)
        return -1;
    r = fields_json(f, "payload", 1, &buf->payload);
    if (r < 0)
        return -1;
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%spayload is required", f->prefix);
    spec->payload = buf->payload;
    r = fields_int(f, "priority", INT32_MIN, INT32_MAX, &v);
    if (r < 0)
        return -1;
    if (r > 0)
        spec->priority = (int32_t)v;

    int64_t run_at, delay;
    int has_run_at = fields_int(f, "run_at", 0, JOB_RUN_AT_MAX, &run_at);
    if (has_run_at < 0)
        return -1;
    int has_delay = fields_int(f, "delay_seconds", 0, JOB_DELAY_MAX, &delay);
    if (has_delay < 0)
        return -1;
    if (has_run_at && has_delay)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%srun_at and %sdelay_seconds cannot be given together", f->prefix,
                           f->prefix);
    if (has_run_at)
        spec->run_at = run_at;
    if (has_delay)
        spec->delay = delay;

    if (fields_int(f, "max_attempts", 1, JOB_ATTEMPTS_MAX, &spec->max_attempts) < 0)
        return -1;
    if (fields_int(f, "max_runtime_seconds", 1, JOB_RUNTIME_MAX, &spec->max_runtime_seconds) < 0)
        return -1;
    if (fields_tags(f, "requires", &buf->requires) < 0)
        return -1;
    spec->requires = buf->requires;
    if (fields_string(f, "idempotency_key", 1, JOB_IDENT_MAX, &spec->idempotency_key) < 0)
        return -1;
    if (fields_string(f, "concurrency_key", 1, JOB_IDENT_MAX, &spec->concurrency_key) < 0)
        return -1;
    if (parse_dedup(f, spec) < 0)
        return -1;
    if (parse_workflow(f, spec, buf) < 0)
        return -1;
    return parse_expiry(f, spec);
}

void spec_buf_clear(struct spec_buf *buf)
{
    if (!buf)
        return;
    free(buf->payload);
    free(buf->requires);
    free(buf->deps);
    free(buf->dep_refs);
    memset(buf, 0, sizeof *buf);
}

int parse_claim(struct fields *f, struct claim_args *c)
{
    int64_t v;
    int r;
    memset(c, 0, sizeof *c);
    c->lease_seconds = DEFAULT_LEASE_SECONDS;
    c->max_jobs = 1;

    r = fields_string(f, "worker_id", 1, JOB_IDENT_MAX, &c->worker_id);
    if (r < 0)
        return -1;
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "worker_id is required");

    const char *queue = NULL;
    int has_queue = fields_queue(f, "queue", &queue);
    if (has_queue < 0)
        return -1;
    int has_queues = fields_queue_list(f, "queues", c->queues, JOB_QUEUES_MAX, &c->nqueues);
    if (has_queues < 0)
        return -1;
    if (has_queue && has_queues)
        return fields_fail(f, ERR_INVALID_REQUEST, "queue and queues cannot be given together");
    if (has_queue) {
        c->queues[0] = queue;
        c->nqueues = 1;
    } else if (!has_queues) {
        c->queues[0] = default_queues[0];
        c->nqueues = 1;
    }

    if (fields_int(f, "lease_seconds", 1, JOB_LEASE_MAX, &c->lease_seconds) < 0)
        return -1;
    r = fields_int(f, "max_jobs", 1, JOB_CLAIM_MAX, &v);
    if (r < 0)
        return -1;
    if (r > 0)
        c->max_jobs = (int)v;
    if (fields_int(f, "wait_seconds", 0, JOB_WAIT_MAX, &c->wait_seconds) < 0)
        return -1;
    if (fields_tags(f, "capabilities", &c->capabilities) < 0)
        return -1;
    return 0;
}

void claim_args_clear(struct claim_args *c)
{
    if (!c)
        return;
    free(c->capabilities);
    memset(c, 0, sizeof *c);
}

static int read_token(struct fields *f, struct lease_args *a)
{
    memset(a, 0, sizeof *a);
    int r = fields_string(f, "lease_token", 1, PARSE_TOKEN_MAX, &a->lease_token);
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "lease_token is required");
    return r < 0 ? -1 : 0;
}

int parse_heartbeat(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    if (fields_int(f, "lease_seconds", 1, JOB_LEASE_MAX, &a->lease_seconds) < 0)
        return -1;
    if (fields_json(f, "progress", 0, &a->json) < 0)
        return -1;
    return 0;
}

int parse_complete(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    if (fields_json(f, "result", 0, &a->json) < 0)
        return -1;
    return 0;
}

int parse_fail(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    a->fail.retry = 1;
    a->fail.retry_in_seconds = -1;
    if (fields_string(f, "error_code", 1, JOB_IDENT_MAX, &a->fail.error_code) < 0)
        return -1;
    if (fields_json(f, "error_detail", 0, &a->json) < 0)
        return -1;
    a->fail.error_detail = a->json;
    if (fields_bool(f, "retry", &a->fail.retry) < 0)
        return -1;
    if (fields_int(f, "retry_in_seconds", 0, JOB_DELAY_MAX, &a->fail.retry_in_seconds) < 0)
        return -1;
    return 0;
}

int parse_snooze(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    int r = fields_int(f, "seconds", 0, JOB_DELAY_MAX, &a->seconds);
    if (r < 0)
        return -1;
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "seconds is required");
    if (fields_bool(f, "pause_key", &a->pause_key) < 0)
        return -1;
    return 0;
}

void lease_args_clear(struct lease_args *a)
{
    if (!a)
        return;
    free(a->json);
    memset(a, 0, sizeof *a);
}

/* Parse an unsigned decimal of at most 9 digits. */
static int parse_small_uint(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 9 || strspn(s, "0123456789") != n)
        return -1;
    *out = strtoll(s, NULL, 10);
    return 0;
}

int parse_list_query(struct fields *f, const char *queue, const char *status, const char *limit,
                     const char *cursor, struct list_filter *out)
{
    memset(out, 0, sizeof *out);
    out->status = -1;
    out->limit = DEFAULT_LIST_LIMIT;
    if (queue) {
        if (!job_queue_name_ok(queue)) {
            char why[64];
            fields_queue_why(queue, strlen(queue), why, sizeof why);
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "queue must be 1 to %d characters of A-Z a-z 0-9 . _ : - (%s)",
                               JOB_QUEUE_MAX, why);
        }
        out->queue = queue;
    }
    if (status) {
        enum job_status s;
        if (job_status_parse(status, &s) < 0)
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "status must be one of queued, blocked, running, succeeded, "
                               "failed, cancelled");
        out->status = (int)s;
    }
    if (limit) {
        int64_t v;
        if (parse_small_uint(limit, &v) < 0 || v < 1 || v > JOB_LIST_MAX)
            return fields_fail(f, ERR_INVALID_REQUEST, "limit must be an integer between 1 and %d",
                               JOB_LIST_MAX);
        out->limit = (int)v;
    }
    if (cursor && cursor_parse(cursor, &out->after_id) < 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "cursor is not a cursor from next_cursor");
    return 0;
}

static const char base36[] = "0123456789abcdefghijklmnopqrstuvwxyz";

void cursor_format(int64_t after, char *buf, size_t len)
{
    char tmp[16];
    size_t n = 0;
    uint64_t v = after > 0 ? (uint64_t)after : 0;
    do {
        tmp[n++] = base36[v % 36];
        v /= 36;
    } while (v && n < sizeof tmp);
    size_t i = 0;
    for (; i < n && i + 1 < len; i++)
        buf[i] = tmp[n - 1 - i];
    if (len)
        buf[i] = '\0';
}

int cursor_parse(const char *s, int64_t *after)
{
    size_t n = strlen(s);
    if (n == 0 || n > 13 || s[0] == '0')
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = s[i] ? strchr(base36, s[i]) : NULL;
        if (!d)
            return -1;
        uint64_t digit = (uint64_t)(d - base36);
        if (v > ((uint64_t)INT64_MAX - digit) / 36)
            return -1;
        v = v * 36 + digit;
    }
    *after = (int64_t)v;
    return 0;
}
