/* Producer and reader endpoints: POST /jobs, POST /jobs/batch, GET /jobs/{id}, GET /jobs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "clock.h"
#include "handlers.h"
#include "jobjson.h"
#include "parse.h"
#include "reply.h"

enum MHD_Result handle_enqueue(struct request *rq)
{
    int64_t now = clock_now();
    struct fields f;
    cJSON *root;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0)
        return fields_reply(rq, &f);

    enum MHD_Result res;
    struct job_spec spec;
    struct spec_buf buf;
    if (parse_job_spec(&f, now, &spec, &buf) < 0) {
        res = fields_reply(rq, &f);
        goto out;
    }
    struct job job = {0};
    int created = 0;
    enum store_result r = store_enqueue(rq->app->store, &spec, 1, now, &job, &created);
    if (r == STORE_OK || r == STORE_EXISTS) {
        char location[32];
        snprintf(location, sizeof location, "/jobs/%" PRId64, job.id);
        cJSON *body = job_to_json(&job, 0);
        job_clear(&job);
        res = reply_json_headers(rq, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, body,
                                 MHD_HTTP_HEADER_LOCATION, location, NULL);
    } else {
        res = reply_store_error(rq, r, "the job");
    }
out:
    spec_buf_clear(&buf);
    cJSON_Delete(root);
    return res;
}

/* Read every element of the batch (n of them) into specs and bufs. Returns 0, or -1 with f's
 * error set to the failing element's (its message names jobs[i]). */
static int read_batch(struct fields *f, int64_t now, struct job_spec *specs, struct spec_buf *bufs,
                      size_t n)
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
        if (parse_job_spec(&ef, now, &specs[i], &bufs[i]) < 0) {
            *f = ef;
            return -1;
        }
        i++;
    }
    return 0;
}

static cJSON *jobs_body(const struct job *jobs, size_t n, int with_token)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "jobs");
    if (!arr) {
        cJSON_Delete(root);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *j = job_to_json(&jobs[i], with_token);
        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            cJSON_Delete(root);
            return NULL;
        }
    }
    return root;
}

enum MHD_Result handle_enqueue_batch(struct request *rq)
{
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
    struct job_spec *specs = calloc(n, sizeof *specs);
    struct spec_buf *bufs = calloc(n, sizeof *bufs);
    struct job *out = calloc(n, sizeof *out);
    int *created = calloc(n, sizeof *created);
    if (!specs || !bufs || !out || !created) {
        res = reply_error(rq, ERR_INTERNAL, "out of memory");
        goto done;
    }
    if (read_batch(&f, now, specs, bufs, n) < 0) {
        res = fields_reply(rq, &f);
        goto done;
    }
    enum store_result r = store_enqueue(rq->app->store, specs, n, now, out, created);
    if (r == STORE_OK || r == STORE_EXISTS) {
        res = reply_json(rq, MHD_HTTP_CREATED, jobs_body(out, n, 0));
        for (size_t i = 0; i < n; i++)
            job_clear(&out[i]);
    } else {
        res = reply_store_error(rq, r, "the batch");
    }
done:
    for (size_t i = 0; bufs && i < n; i++)
        spec_buf_clear(&bufs[i]);
    free(specs);
    free(bufs);
    free(out);
    free(created);
    cJSON_Delete(root);
    return res;
}

enum MHD_Result handle_get_job(struct request *rq)
{
    char what[40];
    snprintf(what, sizeof what, "job %" PRId64, rq->id);
    struct job job = {0};
    enum store_result r = store_get(rq->app->store, rq->id, &job);
    if (r != STORE_OK)
        return reply_store_error(rq, r, what);
    return reply_job(rq, MHD_HTTP_OK, &job);
}

static const char *query(struct request *rq, const char *key)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

enum MHD_Result handle_list_jobs(struct request *rq)
{
    struct fields f;
    struct jspan none = {"", 0};
    struct list_filter filter;
    fields_init(&f, NULL, none, NULL);
    if (parse_list_query(&f, query(rq, "queue"), query(rq, "status"), query(rq, "limit"),
                         query(rq, "cursor"), &filter) < 0)
        return fields_reply(rq, &f);

    struct job *jobs = calloc((size_t)filter.limit, sizeof *jobs);
    if (!jobs)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    size_t n = 0;
    int more = 0;
    enum store_result r = store_list(rq->app->store, &filter, jobs, &n, &more);
    if (r != STORE_OK) {
        free(jobs);
        return reply_store_error(rq, r, "the job list");
    }
    cJSON *body = jobs_body(jobs, n, 0);
    if (body) {
        char cursor[24];
        cJSON *next = NULL;
        if (more && n > 0) {
            cursor_format(jobs[n - 1].id, cursor, sizeof cursor);
            next = cJSON_AddStringToObject(body, "next_cursor", cursor);
        } else {
            next = cJSON_AddNullToObject(body, "next_cursor");
        }
        if (!next) {
            cJSON_Delete(body);
            body = NULL;
        }
    }
    job_array_free(jobs, n);
    return reply_json(rq, MHD_HTTP_OK, body);
}
