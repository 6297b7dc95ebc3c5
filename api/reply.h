/* Answers. Every error body comes from one table: error code -> HTTP status -> default
 * message, as {"error": {"code": "...", "message": "..."}}. */
#ifndef JOBQ_REPLY_H
#define JOBQ_REPLY_H

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "request.h"
#include "store.h"

/* The WWW-Authenticate challenge of every 401 answer. */
#define REPLY_WWW_AUTHENTICATE "Bearer realm=\"jobq\""

enum err {
    ERR_INVALID_JSON = 0,   /* 400 invalid_json */
    ERR_INVALID_REQUEST,    /* 400 invalid_request (message names the field) */
    ERR_UNAUTHORIZED,       /* 401 unauthorized (with WWW-Authenticate: Bearer realm="jobq") */
    ERR_FORBIDDEN,          /* 403 forbidden: a known token whose role may not do this */
    ERR_NOT_FOUND,          /* 404 not_found */
    ERR_METHOD_NOT_ALLOWED, /* 405 method_not_allowed (with Allow) */
    ERR_LEASE_LOST,         /* 409 lease_lost */
    ERR_CONFLICT,           /* 409 conflict */
    ERR_PAYLOAD_TOO_LARGE,  /* 413 payload_too_large */
    ERR_UNSUPPORTED_MEDIA,  /* 415 unsupported_media_type */
    ERR_UNAVAILABLE,        /* 503 unavailable */
    ERR_INTERNAL,           /* 500 internal */
    ERR_COUNT
};

/* The code string ("lease_lost") and HTTP status of an error. */
const char *err_code(enum err e);
unsigned err_status(enum err e);

/* Queue `body` as JSON with `status`. Consumes body, even on failure. Returns MHD_YES or
 * MHD_NO (the connection is then closed). Sets rq->answered and rq->status. */
enum MHD_Result reply_json(struct request *rq, unsigned status, cJSON *body);

/* Like reply_json() with extra headers: pairs of name, value, ending with NULL. */
enum MHD_Result reply_json_headers(struct request *rq, unsigned status, cJSON *body, ...);

struct jtext;

/* Queue the JSON text of t (jobjson.h) with `status` and extra headers (pairs of name, value,
 * ending with NULL). Consumes t->p, even on failure (t is left empty); a t that ran out of
 * memory is answered 500. Returns and sets like reply_json(). */
enum MHD_Result reply_jtext(struct request *rq, unsigned status, struct jtext *t, ...)
    __attribute__((sentinel));

/* Queue an error answer. fmt (printf-style, may be NULL for the table's default message)
 * becomes the message. ERR_UNAUTHORIZED answers carry REPLY_WWW_AUTHENTICATE. */
enum MHD_Result reply_error(struct request *rq, enum err e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 405 with an Allow header listing `allow` (e.g. "GET, POST"). */
enum MHD_Result reply_method_not_allowed(struct request *rq, const char *allow);

/* Queue a plain text body (for /metrics): text is malloc'd and consumed, even on failure
 * (a large text is not copied). */
enum MHD_Result reply_text_take(struct request *rq, unsigned status, const char *content_type,
                                char *text, size_t len);

/* Queue the malloc'd text (len bytes) with `status`, `content_type` and extra headers (pairs
 * of name, value, ending with NULL). Consumes text, even on failure. Returns and sets like
 * reply_json(). */
enum MHD_Result reply_take(struct request *rq, unsigned status, const char *content_type,
                           char *text, size_t len, ...) __attribute__((sentinel));

/* Queue len bytes of data with `status`, `content_type` and extra headers (pairs of name,
 * value, ending with NULL). Borrows data for as long as the daemon runs: it is never copied
 * nor freed, so it must be static (the dashboard's assets). Returns and sets like
 * reply_json(). */
enum MHD_Result reply_static(struct request *rq, unsigned status, const char *content_type,
                             const void *data, size_t len, ...) __attribute__((sentinel));

/* Map a store failure (BUSY, UNAVAILABLE, ERROR, NOT_FOUND, LEASE_LOST, CONFLICT) to its
 * error answer; `what` names the job for the message ("job 42"). */
/* Queue resp (consumed, even on failure: libmicrohttpd frees it with its callback's free) as
 * the answer, with content_type and extra headers (pairs of name, value, ending with NULL).
 * For a streamed body (GET /events): the access log counts no bytes. Returns like
 * reply_json(). */
enum MHD_Result reply_response(struct request *rq, unsigned status, struct MHD_Response *resp,
                               const char *content_type, ...) __attribute__((sentinel));

enum MHD_Result reply_store_error(struct request *rq, enum store_result r, const char *what);

/* Answer one job object (without its lease token) with `status`, then job_clear(j). */
enum MHD_Result reply_job(struct request *rq, unsigned status, struct job *j);

/* What a handler returns after an answer was attempted: MHD_YES when a response is queued
 * (rq->answered), MHD_NO otherwise (the connection is then closed). */
enum MHD_Result reply_result(const struct request *rq);

#endif
