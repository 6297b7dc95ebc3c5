/* Typed field readers for request bodies. They never answer: a reader that rejects a field
 * returns -1 with f->code and f->msg set (the message names the field, with f->prefix such as
 * "jobs[3]."), and the handler answers with fields_reply(). So they can be tested without a
 * connection.
 *
 * A field is looked up case-sensitively in the parsed object (cJSON) and, for its raw text,
 * in the body span (json_member); both take the first member of a name. JSON null counts as
 * absent. Readers of decoded strings reject strings holding NUL (\u0000). */
#ifndef JOBQ_FIELDS_H
#define JOBQ_FIELDS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonin.h"
#include "reply.h"

struct fields {
    const cJSON *obj;  /* the object whose members are read; borrowed */
    struct jspan span; /* its text in the body; borrowed */
    char prefix[32];   /* prepended to field names in messages: "" or "jobs[3]." */
    enum err code;     /* after a failure: ERR_INVALID_JSON or ERR_INVALID_REQUEST */
    char msg[256];     /* after a failure: the message */
};

/* Check and parse a request body (body may be NULL when len is 0; an empty body is {}).
 * Returns 0 with *root set to the parsed object (the caller frees it with cJSON_Delete) and f
 * pointing at it; or -1 with f's error set: invalid_json when json_validate() rejects the
 * text, invalid_request when the top-level value is not an object, internal when out of
 * memory. body must stay valid while f is used. */
int fields_parse_body(struct fields *f, cJSON **root, const char *body, size_t len);

/* Point f at obj, whose text is span, with the message prefix (NULL for none). */
void fields_init(struct fields *f, const cJSON *obj, struct jspan span, const char *prefix);

/* Record an error in f. Returns -1. */
int fields_fail(struct fields *f, enum err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The readers below return 1 when the field is present and valid (*out set), 0 when it is
 * absent or null (*out untouched), -1 when it is invalid (f's error set). */

/* An integral JSON number in [min, max] (1.0 and 1e2 are integral; 1.5, 1e400 are not). */
int fields_int(struct fields *f, const char *name, int64_t min, int64_t max, int64_t *out);

/* A JSON object: sub reads its members, with messages prefixed by f's prefix and "name."
 * (both borrowed from f's body). On failure f's error is set. */
int fields_object(struct fields *f, const char *name, struct fields *sub);

/* true or false. */
int fields_bool(struct fields *f, const char *name, int *out);

/* A string of min..max bytes without NUL. *out is borrowed from the parsed object. */
int fields_string(struct fields *f, const char *name, size_t min, size_t max, const char **out);

/* Why s[0..n) is not a valid queue name, for a message naming what is wrong with it: "it
 * holds ' ' at byte 3", "it holds U+00E9 at byte 0", "it is empty", "it is 129 bytes long".
 * Written to out (len bytes). This function can't fail. */
void fields_queue_why(const char *s, size_t n, char *out, size_t len);

/* A valid queue name (job_queue_name_ok); a refusal names what is wrong with it. *out is
 * borrowed from the parsed object. */
int fields_queue(struct fields *f, const char *name, const char **out);

/* An array of 1..max valid queue names; duplicates are dropped, order kept; a refusal names
 * the element (queues[2]) and what is wrong with it. out must hold max entries, borrowed
 * from the parsed object. */
int fields_queue_list(struct fields *f, const char *name, const char **out, size_t max, size_t *n);

/* An array of at most JOB_TAGS_MAX strings of 1..JOB_TAG_MAX bytes, deduplicated and sorted
 * bytewise, as compact JSON array text in *out (malloc'd, the caller frees). An empty array
 * reads as absent (returns 0). */
int fields_tags(struct fields *f, const char *name, char **out);

/* Any JSON value, as compact text taken byte-exact from the body (numbers and strings as
 * sent), malloc'd into *out (the caller frees). A JSON null is absent unless keep_null is
 * set, in which case *out is "null". */
int fields_json(struct fields *f, const char *name, int keep_null, char **out);

/* Answer f's error. */
enum MHD_Result fields_reply(struct request *rq, const struct fields *f);

#endif
