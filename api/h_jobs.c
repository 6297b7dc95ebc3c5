/* Producer and reader endpoints: POST /jobs, POST /jobs/batch, GET /jobs/{id} (its attempts,
 * dependencies and dependents), GET /jobs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "clock.h"
#include "handlers.h"
#include "jobjson.h"
#include "parse.h"
#include "parse_deps.h"
#include "pending.h"
#include "reply.h"
#include "trace.h"

/* The W3C trace context headers of a request, checked (trace.h): a job body without a
 * traceparent field takes them. An invalid or repeated traceparent is ignored with its
 * tracestate, an invalid tracestate alone; several tracestate headers are one list. */
struct trace_hdr {
    int parents; /* traceparent headers seen */
    char parent[TRACE_PARENT_LEN + 1];
    size_t state_len;
    int state_bad; /* the joined tracestate passed TRACE_STATE_MAX */
    char state[TRACE_STATE_MAX + 1];
};

static enum MHD_Result trace_hdr_one(void *arg, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    struct trace_hdr *h = arg;
    size_t n = value ? strlen(value) : 0;
    if (strcasecmp(key, "traceparent") == 0) {
        if (h->parents++ == 0 && trace_parent_ok(value, n))
            memcpy(h->parent, value, n + 1);
    } else if (strcasecmp(key, "tracestate") == 0) {
        size_t sep = h->state_len > 0;
        if (h->state_len + sep + n > TRACE_STATE_MAX) {
            h->state_bad = 1;
        } else {
            if (sep)
                h->state[h->state_len++] = ',';
            memcpy(h->state + h->state_len, value, n + 1);
            h->state_len += n;
        }
    }
    return MHD_YES;
}

/* Read rq's trace context headers into h (zeroed first). This function can't fail. */
static void trace_hdr_read(struct request *rq, struct trace_hdr *h)
{
    memset(h, 0, sizeof *h);
    MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, trace_hdr_one, h);
    if (h->parents != 1)
        h->parent[0] = '\0';
    if (h->state_bad || !trace_state_ok(h->state, h->state_len) ||
        !h->state[strspn(h->state, " \t,")])
        h->state_len = 0;
}

/* Give sp the headers' trace context unless its body named its own (the body wins). */
static void trace_hdr_apply(const struct trace_hdr *h, struct job_spec *sp)
{
    if (sp->traceparent || !h->parent[0])
        return;
    sp->traceparent = h->parent;
    sp->tracestate = h->state_len ? h->state : NULL;
}

/* POST /jobs across its two calls: parsed, then the insert is over. */
struct enqueue_state {
    struct pending p;
    cJSON *root;
    struct job_spec spec;
    struct spec_buf buf;
    struct job job;
    int created;
    struct trace_hdr trace;
};

static void enqueue_state_free(void *arg)
{
    struct enqueue_state *es = arg;
    if (!es)
        return;
    job_clear(&es->job);
    spec_buf_clear(&es->buf);
    cJSON_Delete(es->root);
    free(es);
}

/* The insert is over: answer it. */
static enum MHD_Result enqueue_answer(struct request *rq, struct enqueue_state *es)
{
    enum store_result r = es->p.call.result;
    if (r == STORE_NOT_FOUND)
        return reply_error(rq, ERR_INVALID_REQUEST, "depends_on: job %" PRId64 " does not exist",
                           es->p.call.enqueue.missing_id);
    if (r != STORE_OK && r != STORE_EXISTS)
        return reply_store_error(rq, r, "the job");
    char location[32];
    snprintf(location, sizeof location, "/jobs/%" PRId64, es->job.id);
    struct jtext t = {0};
    jtext_job(&t, &es->job, 0);
    return reply_jtext(rq, es->created ? MHD_HTTP_CREATED : MHD_HTTP_OK, &t,
                       MHD_HTTP_HEADER_LOCATION, location, NULL);
}

enum MHD_Result handle_enqueue(struct request *rq)
{
    if (rq->state)
        return enqueue_answer(rq, rq->state);
    int64_t now = clock_now();
    struct fields f;
    cJSON *root;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0)
        return fields_reply(rq, &f);
    struct enqueue_state *es = calloc(1, sizeof *es);
    if (!es) {
        cJSON_Delete(root);
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    }
    es->root = root;
    if (parse_job_spec(&f, &es->spec, &es->buf) < 0 || parse_spec_times(&f, &es->spec, now) < 0 ||
        parse_single_deps(&f, &es->spec, &es->buf) < 0) {
        enum MHD_Result res = fields_reply(rq, &f);
        enqueue_state_free(es);
        return res;
    }
    trace_hdr_read(rq, &es->trace);
    trace_hdr_apply(&es->trace, &es->spec);
    es->p.call = (struct store_call){
        .kind = STORE_CALL_ENQUEUE,
        .now = now,
        .enqueue = {.specs = &es->spec, .n = 1, .out = &es->job, .created = &es->created}};
    rq->state = es;
    rq->state_free = enqueue_state_free;
    return pending_submit(rq, &es->p);
}

/* Read every element of the batch (n of them) into specs and bufs. Returns 0, or -1 with f's
 * error set to the failing element's (its message names jobs[i]). */
static int read_batch(struct fields *f, struct job_spec *specs, struct spec_buf *bufs, size_t n,
                      int64_t now)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(f->obj, "jobs");
    struct jspan text;
    if (!json_member(f->span, "jobs", &text))
        return fields_fail(f, ERR_INTERNAL, "jobs vanished from the body");
    size_t pos = 0, i = 0;
    const cJSON *el;
    cJSON_ArrayForEach(el, arr)
    {
        struct jspan span;
        if (i >= n || !json_array_next(text, &pos, &span))
            return fields_fail(f, ERR_INTERNAL, "jobs[%zu] vanished from the body", i);
        if (!cJSON_IsObject(el))
            return fields_fail(f, ERR_INVALID_REQUEST, "jobs[%zu] must be an object", i);
        struct fields ef;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "jobs[%zu].", i);
        fields_init(&ef, el, span, prefix);
        if (parse_job_spec(&ef, &specs[i], &bufs[i]) < 0 ||
            parse_spec_times(&ef, &specs[i], now) < 0 || parse_batch_ref(&ef, &bufs[i]) < 0) {
            *f = ef;
            return -1;
        }
        i++;
    }
    return 0;
}

/* POST /jobs/batch across its two calls. */
struct batch_state {
    struct pending p;
    cJSON *root;
    size_t n;
    struct job_spec *specs;
    struct spec_buf *bufs;
    struct job *out;
    int *created;
    struct trace_hdr trace;
};

static void batch_state_free(void *arg)
{
    struct batch_state *bs = arg;
    if (!bs)
        return;
    for (size_t i = 0; i < bs->n; i++) {
        if (bs->bufs)
            spec_buf_clear(&bs->bufs[i]);
        if (bs->out)
            job_clear(&bs->out[i]);
    }
    free(bs->specs);
    free(bs->bufs);
    free(bs->out);
    free(bs->created);
    cJSON_Delete(bs->root);
    free(bs);
}

enum MHD_Result handle_enqueue_batch(struct request *rq)
{
    struct batch_state *bs = rq->state;
    if (bs) {
        enum store_result r = bs->p.call.result;
        if (r == STORE_NOT_FOUND)
            return reply_error(rq, ERR_INVALID_REQUEST,
                               "jobs[%zu].depends_on: job %" PRId64 " does not exist",
                               bs->p.call.enqueue.missing_spec, bs->p.call.enqueue.missing_id);
        if (r != STORE_OK && r != STORE_EXISTS)
            return reply_store_error(rq, r, "the batch");
        struct jtext t = {0};
        jtext_jobs(&t, bs->out, bs->n, 0);
        return reply_jtext(rq, MHD_HTTP_CREATED, &t, NULL);
    }
    int64_t now = clock_now();
    struct fields f;
    cJSON *root;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0)
        return fields_reply(rq, &f);

    enum MHD_Result res;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
    if (n < 1 || n > JOB_BATCH_MAX) {
        res = reply_error(rq, ERR_INVALID_REQUEST, "jobs must be an array of 1 to %d job bodies",
                          JOB_BATCH_MAX);
        cJSON_Delete(root);
        return res;
    }
    bs = calloc(1, sizeof *bs);
    if (!bs) {
        cJSON_Delete(root);
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    }
    bs->root = root;
    bs->n = n;
    bs->specs = calloc(n, sizeof *bs->specs);
    bs->bufs = calloc(n, sizeof *bs->bufs);
    bs->out = calloc(n, sizeof *bs->out);
    bs->created = calloc(n, sizeof *bs->created);
    if (!bs->specs || !bs->bufs || !bs->out || !bs->created) {
        res = reply_error(rq, ERR_INTERNAL, "out of memory");
        batch_state_free(bs);
        return res;
    }
    if (read_batch(&f, bs->specs, bs->bufs, n, now) < 0 ||
        parse_batch_deps(&f, bs->specs, bs->bufs, n) < 0) {
        res = fields_reply(rq, &f);
        batch_state_free(bs);
        return res;
    }
    trace_hdr_read(rq, &bs->trace);
    for (size_t i = 0; i < n; i++)
        trace_hdr_apply(&bs->trace, &bs->specs[i]);
    bs->p.call = (struct store_call){
        .kind = STORE_CALL_ENQUEUE,
        .now = now,
        .enqueue = {.specs = bs->specs, .n = n, .out = bs->out, .created = bs->created}};
    rq->state = bs;
    rq->state_free = batch_state_free;
    return pending_submit(rq, &bs->p);
}

/* GET /jobs/{id}, its attempts, dependencies and dependents across their two calls. */
struct job_read {
    struct pending_read r;
    int64_t id;
    struct job job;        /* get */
    struct job_attempt *a; /* attempts */
    size_t n;
    struct job_link *links; /* dependencies, dependents */
    size_t nlinks;
    int more;
};

static void job_read_free(void *arg)
{
    struct job_read *jr = arg;
    if (!jr)
        return;
    job_clear(&jr->job);
    job_attempts_free(jr->a, jr->n);
    job_links_free(jr->links, jr->nlinks);
    free(jr);
}

/* Start the read of job rq->id, or answer 500 when out of memory. */
static enum MHD_Result
job_read_start(struct request *rq, enum store_result (*read)(struct pending_read *, struct store *))
{
    struct job_read *jr = pending_read_new(rq, sizeof *jr, read, job_read_free);
    if (!jr)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    jr->id = rq->id;
    return pending_read_submit(rq, &jr->r);
}

/* Answer the failed read of job rq->id. */
static enum MHD_Result job_read_error(struct request *rq, enum store_result r)
{
    char what[40];
    snprintf(what, sizeof what, "job %" PRId64, rq->id);
    return reply_store_error(rq, r, what);
}

static enum store_result get_read(struct pending_read *r, struct store *s)
{
    struct job_read *jr = (struct job_read *)r;
    return store_get(s, jr->id, &jr->job);
}

enum MHD_Result handle_get_job(struct request *rq)
{
    struct job_read *jr = rq->state;
    if (!jr)
        return job_read_start(rq, get_read);
    if (jr->r.result != STORE_OK)
        return job_read_error(rq, jr->r.result);
    return reply_job(rq, MHD_HTTP_OK, &jr->job);
}

static enum store_result attempts_read(struct pending_read *r, struct store *s)
{
    struct job_read *jr = (struct job_read *)r;
    return store_attempts(s, jr->id, &jr->a, &jr->n);
}

enum MHD_Result handle_attempts(struct request *rq)
{
    struct job_read *jr = rq->state;
    if (!jr)
        return job_read_start(rq, attempts_read);
    if (jr->r.result != STORE_OK)
        return job_read_error(rq, jr->r.result);
    struct jtext t = {0};
    jtext_attempts(&t, jr->a, jr->n);
    return reply_jtext(rq, MHD_HTTP_OK, &t, NULL);
}

static enum store_result dependencies_read(struct pending_read *r, struct store *s)
{
    struct job_read *jr = (struct job_read *)r;
    return store_links(s, jr->id, 0, &jr->links, &jr->nlinks, &jr->more);
}

static enum store_result dependents_read(struct pending_read *r, struct store *s)
{
    struct job_read *jr = (struct job_read *)r;
    return store_links(s, jr->id, 1, &jr->links, &jr->nlinks, &jr->more);
}

/* GET /jobs/{id}/dependencies (dependents 0) or /dependents (1). */
static enum MHD_Result links_answer(struct request *rq, int dependents)
{
    struct job_read *jr = rq->state;
    if (!jr)
        return job_read_start(rq, dependents ? dependents_read : dependencies_read);
    if (jr->r.result != STORE_OK)
        return job_read_error(rq, jr->r.result);
    struct jtext t = {0};
    jtext_links(&t, dependents ? "dependents" : "dependencies", jr->links, jr->nlinks,
                dependents ? jr->more : -1);
    return reply_jtext(rq, MHD_HTTP_OK, &t, NULL);
}

enum MHD_Result handle_dependencies(struct request *rq)
{
    return links_answer(rq, 0);
}

enum MHD_Result handle_dependents(struct request *rq)
{
    return links_answer(rq, 1);
}

static const char *query(struct request *rq, const char *key)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* GET /jobs across its two calls. */
struct list_read {
    struct pending_read r;
    struct list_filter filter;
    char queue[JOB_QUEUE_MAX + 1]; /* filter.queue points here: the reader thread does not
                                    * read the connection's memory */
    struct job *jobs;              /* filter.limit of them */
    size_t n;
    int more;
};

static void list_read_free(void *arg)
{
    struct list_read *lr = arg;
    if (!lr)
        return;
    job_array_free(lr->jobs, lr->n);
    free(lr);
}

static enum store_result list_read(struct pending_read *r, struct store *s)
{
    struct list_read *lr = (struct list_read *)r;
    return store_list(s, &lr->filter, lr->jobs, &lr->n, &lr->more);
}

/* Parse the query and start the read, or answer why it cannot start. */
static enum MHD_Result list_start(struct request *rq)
{
    struct fields f;
    struct jspan none = {"", 0};
    struct list_filter filter;
    fields_init(&f, NULL, none, NULL);
    if (parse_list_query(&f, query(rq, "queue"), query(rq, "status"), query(rq, "limit"),
                         query(rq, "cursor"), &filter) < 0)
        return fields_reply(rq, &f);
    struct list_read *lr = pending_read_new(rq, sizeof *lr, list_read, list_read_free);
    if (!lr || !(lr->jobs = calloc((size_t)filter.limit, sizeof *lr->jobs)))
        return reply_error(rq, ERR_INTERNAL, "out of memory"); /* lr goes with the request */
    lr->filter = filter;
    if (filter.queue) {
        snprintf(lr->queue, sizeof lr->queue, "%s", filter.queue);
        lr->filter.queue = lr->queue;
    }
    return pending_read_submit(rq, &lr->r);
}

enum MHD_Result handle_list_jobs(struct request *rq)
{
    struct list_read *lr = rq->state;
    if (!lr)
        return list_start(rq);
    if (lr->r.result != STORE_OK)
        return reply_store_error(rq, lr->r.result, "the job list");
    struct job *jobs = lr->jobs;
    size_t n = lr->n;
    struct jtext t = {0};
    jtext_put(&t, "{\"jobs\":", 8);
    jtext_job_array(&t, jobs, n, 0);
    if (lr->more && n > 0) {
        char cursor[24];
        cursor_format(jobs[n - 1].id, cursor, sizeof cursor);
        jtext_put(&t, ",\"next_cursor\":\"", 16);
        jtext_put(&t, cursor, strlen(cursor)); /* base 36: nothing to escape */
        jtext_put(&t, "\"}", 2);
    } else {
        jtext_put(&t, ",\"next_cursor\":null}", 20);
    }
    return reply_jtext(rq, MHD_HTTP_OK, &t, NULL);
}
