/* Answers: JSON bodies, the one error table, store failures mapped to errors. */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobjson.h"
#include "log.h"

#define JSON_TYPE "application/json"
#define REPLY_MAX_HEADERS 8

static const struct {
    const char *code;
    unsigned status;
    const char *message;
} err_table[ERR_COUNT] = {
    [ERR_INVALID_JSON] = {"invalid_json", 400, "the request body is not valid JSON"},
    [ERR_INVALID_REQUEST] = {"invalid_request", 400, "the request is not valid"},
    [ERR_UNAUTHORIZED] = {"unauthorized", 401, "a valid bearer token is required"},
    [ERR_FORBIDDEN] = {"forbidden", 403, "the token's role does not allow this"},
    [ERR_NOT_FOUND] = {"not_found", 404, "not found"},
    [ERR_METHOD_NOT_ALLOWED] = {"method_not_allowed", 405, "method not allowed"},
    [ERR_LEASE_LOST] = {"lease_lost", 409, "the lease token does not hold a live lease"},
    [ERR_CONFLICT] = {"conflict", 409, "the job's state does not allow this"},
    [ERR_PAYLOAD_TOO_LARGE] = {"payload_too_large", 413, "the request body is too large"},
    [ERR_UNSUPPORTED_MEDIA] = {"unsupported_media_type", 415,
                               "the request body must be application/json"},
    [ERR_UNAVAILABLE] = {"unavailable", 503, "the service is unavailable, try again"},
    [ERR_INTERNAL] = {"internal", 500, "internal error"},
};

/* The answer when even building an error body fails: static, never freed. */
static const char oom_body[] = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";

const char *err_code(enum err e)
{
    if ((unsigned)e >= ERR_COUNT)
        e = ERR_INTERNAL;
    return err_table[e].code;
}

unsigned err_status(enum err e)
{
    if ((unsigned)e >= ERR_COUNT)
        e = ERR_INTERNAL;
    return err_table[e].status;
}

/* Queue resp (len bytes of body) with status, X-Request-Id and the given extra header pairs;
 * releases resp. */
static enum MHD_Result queue(struct request *rq, unsigned status, struct MHD_Response *resp,
                             size_t len, const char *content_type, const char *const *hdrs,
                             size_t nhdrs)
{
    rq->status = (int)status;
    rq->bytes = len;
    if (!resp) {
        log_error("cannot create a response for %s %s", rq->method, rq->url);
        return MHD_NO;
    }
    enum MHD_Result ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (ok == MHD_YES && rq->request_id[0])
        ok = MHD_add_response_header(resp, "X-Request-Id", rq->request_id);
    for (size_t i = 0; ok == MHD_YES && i + 1 < nhdrs; i += 2)
        ok = MHD_add_response_header(resp, hdrs[i], hdrs[i + 1]);
    if (ok == MHD_YES)
        ok = MHD_queue_response(rq->conn, status, resp);
    MHD_destroy_response(resp);
    if (ok != MHD_YES) {
        log_error("cannot queue a %u response for %s %s", status, rq->method, rq->url);
        return MHD_NO;
    }
    rq->answered = 1;
    return MHD_YES;
}

static enum MHD_Result queue_oom(struct request *rq, const char *const *hdrs, size_t nhdrs)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        sizeof oom_body - 1, (void *)oom_body, MHD_RESPMEM_PERSISTENT);
    return queue(rq, 500, resp, sizeof oom_body - 1, JSON_TYPE, hdrs, nhdrs);
}

static enum MHD_Result queue_json(struct request *rq, unsigned status, cJSON *body,
                                  const char *const *hdrs, size_t nhdrs)
{
    if (!body) {
        log_error("out of memory building a %u answer for %s %s", status, rq->method, rq->url);
        return queue_oom(rq, hdrs, nhdrs);
    }
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!text) {
        log_error("out of memory printing a %u answer for %s %s", status, rq->method, rq->url);
        return queue_oom(rq, hdrs, nhdrs);
    }
    size_t len = strlen(text);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text); /* MHD took ownership only on success */
    return queue(rq, status, resp, len, JSON_TYPE, hdrs, nhdrs);
}

/* Copy the (name, value) pairs of ap, ending with a NULL name, into hdrs (cap entries);
 * pairs with a NULL value or past cap are dropped. Returns the number of entries used. */
static size_t collect_headers(const char **hdrs, size_t cap, va_list ap)
{
    size_t n = 0;
    for (;;) {
        const char *name = va_arg(ap, const char *);
        if (!name)
            break;
        const char *value = va_arg(ap, const char *);
        if (n + 2 <= cap && value) {
            hdrs[n++] = name;
            hdrs[n++] = value;
        }
    }
    return n;
}

/* In a variadic function: declare hdrs and n, the (name, value) pairs after argument `last`. */
#define COLLECT_HEADERS(hdrs, n, last)                                                             \
    const char *hdrs[2 * REPLY_MAX_HEADERS];                                                       \
    size_t n;                                                                                      \
    do {                                                                                           \
        va_list ap_;                                                                               \
        va_start(ap_, last);                                                                       \
        n = collect_headers(hdrs, sizeof hdrs / sizeof hdrs[0], ap_);                              \
        va_end(ap_);                                                                               \
    } while (0)

enum MHD_Result reply_jtext(struct request *rq, unsigned status, struct jtext *t, ...)
{
    COLLECT_HEADERS(hdrs, n, t);
    char *text = t->p;
    size_t len = t->len;
    int oom = t->oom || !text;
    *t = (struct jtext){0};
    if (oom) {
        free(text);
        log_error("out of memory writing a %u answer for %s %s", status, rq->method, rq->url);
        return queue_oom(rq, hdrs, n);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text); /* MHD took ownership only on success */
    return queue(rq, status, resp, len, JSON_TYPE, hdrs, n);
}

enum MHD_Result reply_json(struct request *rq, unsigned status, cJSON *body)
{
    return queue_json(rq, status, body, NULL, 0);
}

enum MHD_Result reply_json_headers(struct request *rq, unsigned status, cJSON *body, ...)
{
    COLLECT_HEADERS(hdrs, n, body);
    return queue_json(rq, status, body, hdrs, n);
}

static cJSON *error_body(enum err e, const char *message)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *inner = cJSON_AddObjectToObject(root, "error");
    if (!inner || !cJSON_AddStringToObject(inner, "code", err_code(e)) ||
        !cJSON_AddStringToObject(inner, "message", message)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

__attribute__((format(printf, 5, 0))) static enum MHD_Result verror(struct request *rq, enum err e,
                                                                    const char *const *hdrs,
                                                                    size_t nhdrs, const char *fmt,
                                                                    va_list ap)
{
    char msg[512];
    if ((unsigned)e >= ERR_COUNT)
        e = ERR_INTERNAL;
    if (fmt)
        vsnprintf(msg, sizeof msg, fmt, ap);
    else
        snprintf(msg, sizeof msg, "%s", err_table[e].message);
    return queue_json(rq, err_table[e].status, error_body(e, msg), hdrs, nhdrs);
}

enum MHD_Result reply_error(struct request *rq, enum err e, const char *fmt, ...)
{
    /* RFC 7235: a 401 names the scheme the client should use. */
    static const char *const challenge[2] = {MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                             REPLY_WWW_AUTHENTICATE};
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result r = e == ERR_UNAUTHORIZED ? verror(rq, e, challenge, 2, fmt, ap)
                                              : verror(rq, e, NULL, 0, fmt, ap);
    va_end(ap);
    return r;
}

static enum MHD_Result error_with_headers(struct request *rq, enum err e, const char *const *hdrs,
                                          size_t nhdrs, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum MHD_Result error_with_headers(struct request *rq, enum err e, const char *const *hdrs,
                                          size_t nhdrs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result r = verror(rq, e, hdrs, nhdrs, fmt, ap);
    va_end(ap);
    return r;
}

enum MHD_Result reply_method_not_allowed(struct request *rq, const char *allow)
{
    const char *hdrs[2] = {MHD_HTTP_HEADER_ALLOW, allow};
    return error_with_headers(rq, ERR_METHOD_NOT_ALLOWED, hdrs, 2, "this path allows only %s",
                              allow);
}

enum MHD_Result reply_text_take(struct request *rq, unsigned status, const char *content_type,
                                char *text, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text);
    return queue(rq, status, resp, len, content_type, NULL, 0);
}

enum MHD_Result reply_take(struct request *rq, unsigned status, const char *content_type,
                           char *text, size_t len, ...)
{
    COLLECT_HEADERS(hdrs, n, len);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text);
    return queue(rq, status, resp, len, content_type, hdrs, n);
}

enum MHD_Result reply_static(struct request *rq, unsigned status, const char *content_type,
                             const void *data, size_t len, ...)
{
    COLLECT_HEADERS(hdrs, n, len);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    return queue(rq, status, resp, len, content_type, hdrs, n);
}

enum MHD_Result reply_response(struct request *rq, unsigned status, struct MHD_Response *resp,
                               const char *content_type, ...)
{
    COLLECT_HEADERS(hdrs, n, content_type);
    return queue(rq, status, resp, 0, content_type, hdrs, n);
}

enum MHD_Result reply_store_error(struct request *rq, enum store_result r, const char *what)
{
    if (!what)
        what = "the job";
    switch (r) {
    case STORE_NOT_FOUND:
        return reply_error(rq, ERR_NOT_FOUND, "%s does not exist", what);
    case STORE_LEASE_LOST:
        return reply_error(rq, ERR_LEASE_LOST, "the lease token does not hold a live lease on %s",
                           what);
    case STORE_CONFLICT:
        return reply_error(rq, ERR_CONFLICT, "the state of %s does not allow this", what);
    case STORE_BUSY:
        return reply_error(rq, ERR_UNAVAILABLE, "the database is busy, try again");
    case STORE_UNAVAILABLE:
        return reply_error(rq, ERR_UNAVAILABLE, "the database is unavailable, try again");
    case STORE_OK:
    case STORE_EXISTS:
    case STORE_ERROR:
    default:
        log_error("store failed (%s) for %s %s", store_result_name(r), rq->method, rq->url);
        return reply_error(rq, ERR_INTERNAL, NULL);
    }
}

enum MHD_Result reply_result(const struct request *rq)
{
    return rq->answered ? MHD_YES : MHD_NO;
}

enum MHD_Result reply_job(struct request *rq, unsigned status, struct job *j)
{
    struct jtext t = {0};
    jtext_job(&t, j, 0);
    job_clear(j);
    return reply_jtext(rq, status, &t, NULL);
}
