/* Limit endpoints: PUT /limits/{key} (create or replace), GET /limits, GET /limits/{key},
 * DELETE /limits/{key}. {key} is the rest of the path after /limits/, as decoded (it may hold
 * '/', ':' and a final '*'). Writes go through store_submit, reads through the reader
 * threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "fields.h"
#include "handlers.h"
#include "jsonin.h"
#include "pending.h"
#include "reply.h"

#define LIMITS_PATH "/limits/"

/* Add name: v, or null when v is JOB_NONE; 0 when out of memory. */
static int add_number_or_null(cJSON *o, const char *name, int64_t v)
{
    if (v == JOB_NONE)
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddNumberToObject(o, name, (double)v) != NULL;
}

/* A limit's object, or NULL when out of memory. */
static cJSON *limit_json(const struct limit *l)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "key", l->key);
    if (ok && l->max_running)
        ok = cJSON_AddNumberToObject(o, "max_running", (double)l->max_running) != NULL;
    else if (ok)
        ok = cJSON_AddNullToObject(o, "max_running") != NULL;
    if (ok && l->rate_jobs) {
        cJSON *rate = cJSON_AddObjectToObject(o, "rate");
        ok = rate && cJSON_AddNumberToObject(rate, "jobs", (double)l->rate_jobs) &&
             cJSON_AddNumberToObject(rate, "per_seconds", (double)l->rate_per_seconds);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "rate") != NULL;
    }
    ok = ok && cJSON_AddNumberToObject(o, "running", (double)l->running);
    ok = ok && add_number_or_null(o, "paused_until", l->paused_until);
    ok = ok && add_number_or_null(o, "window_used", l->window_used);
    ok = ok && cJSON_AddNumberToObject(o, "held", (double)l->held);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A limit call or read across its calls: the key of the path, the body, the answer. */
struct limit_state {
    struct pending p;      /* writes */
    struct pending_read r; /* reads (r.read is set) */
    char key[LIMIT_KEY_MAX + 1];
    int64_t now;
    struct limit in, out; /* put: the body; put, delete, get: the answer */
    struct limit *all;    /* GET /limits: n of them, owned */
    size_t n;
};

static void limit_state_free(void *arg)
{
    struct limit_state *ls = arg;
    if (ls)
        free(ls->all);
    free(ls);
}

/* How a request names a limit in its path. */
enum limit_path {
    PATH_NONE,   /* GET /limits */
    PATH_PUT,    /* a key that cannot be valid is invalid_request */
    PATH_LOOKUP, /* GET, DELETE: a key that cannot be valid is no limit's key (not_found) */
};

/* The {key} of /limits/{key} into key (LIMIT_KEY_MAX + 1 bytes), or answer 400 naming it (404
 * for a lookup). */
static int path_key_or_reply(struct request *rq, enum limit_path path, char *key,
                             enum MHD_Result *res)
{
    const char *s = rq->url + strlen(LIMITS_PATH);
    size_t n = strlen(s);
    const char *why = NULL;
    char rule[160] = "";
    if (limit_key_check(s, n, &why) == LIMIT_KEY_INVALID)
        snprintf(rule, sizeof rule,
                 "a limit key %s, with '*' only as its last byte (a pattern); encode '/', '?', "
                 "'#' and '%%' in the path",
                 why);
    else if (!json_utf8_ok(s, n))
        snprintf(rule, sizeof rule, "a limit key must be UTF-8 text");
    if (!rule[0]) {
        memcpy(key, s, n + 1);
        return 0;
    }
    *res = path == PATH_LOOKUP
               ? reply_error(rq, ERR_NOT_FOUND, "no limit can have this key: %s", rule)
               : reply_error(rq, ERR_INVALID_REQUEST, "key: %s", rule);
    return -1;
}

/* A new state for rq with its path key, or an answer (400, 404, 500) in *res. */
static struct limit_state *limit_start(struct request *rq, enum limit_path path,
                                       enum MHD_Result *res)
{
    char key[LIMIT_KEY_MAX + 1] = "";
    if (path != PATH_NONE && path_key_or_reply(rq, path, key, res) != 0)
        return NULL;
    struct limit_state *ls = calloc(1, sizeof *ls);
    if (!ls) {
        *res = reply_error(rq, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    memcpy(ls->key, key, sizeof key);
    ls->now = clock_now();
    rq->state = ls;
    rq->state_free = limit_state_free;
    return ls;
}

/* The body of PUT /limits/{key} into l, or -1 with f's error set (naming the field). */
static int read_limit_body(struct fields *f, struct limit *l)
{
    struct limit_body b = {
        .max_running = JOB_NONE, .rate_jobs = JOB_NONE, .rate_per_seconds = JOB_NONE};
    struct fields rate;
    if (fields_int(f, "max_running", 1, LIMIT_RUNNING_MAX, &b.max_running) < 0)
        return -1;
    int has_rate = fields_object(f, "rate", &rate);
    if (has_rate < 0)
        return -1;
    if (has_rate) {
        b.rate = 1;
        if (fields_int(&rate, "jobs", 1, LIMIT_RATE_JOBS_MAX, &b.rate_jobs) < 0 ||
            fields_int(&rate, "per_seconds", 1, LIMIT_RATE_SECONDS_MAX, &b.rate_per_seconds) < 0) {
            *f = (struct fields){.code = rate.code};
            memcpy(f->msg, rate.msg, sizeof f->msg);
            return -1;
        }
    }
    const char *bad = limit_body_check(&b, l);
    if (!bad)
        return 0;
    if (strcmp(bad, "max_running or rate") == 0)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "max_running or rate: at least one of them is required");
    return fields_fail(f, ERR_INVALID_REQUEST, "%s: required when rate is given", bad);
}

/* Answer a limit write or single read that is over. */
static enum MHD_Result limit_reply(struct request *rq, struct limit_state *ls, enum store_result r)
{
    if (r == STORE_NOT_FOUND)
        return reply_error(rq, ERR_NOT_FOUND, "no limit with key %s", ls->key);
    if (r == STORE_CONFLICT)
        return reply_error(rq, ERR_CONFLICT,
                           "key: at most %d limits may exist; delete one before adding %s",
                           STORE_LIMITS_MAX, ls->key);
    if (r != STORE_OK)
        return reply_store_error(rq, r, "the limit");
    return reply_json(rq, MHD_HTTP_OK, limit_json(&ls->out));
}

enum MHD_Result handle_limit_put(struct request *rq)
{
    struct limit_state *ls = rq->state;
    if (ls)
        return limit_reply(rq, ls, ls->p.call.result);
    enum MHD_Result res;
    if (!(ls = limit_start(rq, PATH_PUT, &res)))
        return res;
    struct fields f;
    cJSON *root = NULL;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0 ||
        read_limit_body(&f, &ls->in) < 0) {
        cJSON_Delete(root);
        return fields_reply(rq, &f);
    }
    cJSON_Delete(root);
    memcpy(ls->in.key, ls->key, sizeof ls->key);
    ls->p.call = (struct store_call){.kind = STORE_CALL_LIMIT_PUT,
                                     .now = ls->now,
                                     .limit_put = {.limit = &ls->in, .out = &ls->out}};
    return pending_submit(rq, &ls->p);
}

enum MHD_Result handle_limit_delete(struct request *rq)
{
    struct limit_state *ls = rq->state;
    if (ls)
        return limit_reply(rq, ls, ls->p.call.result);
    enum MHD_Result res;
    if (!(ls = limit_start(rq, PATH_LOOKUP, &res)))
        return res;
    ls->p.call = (struct store_call){.kind = STORE_CALL_LIMIT_DELETE,
                                     .now = ls->now,
                                     .limit_delete = {.key = ls->key, .out = &ls->out}};
    return pending_submit(rq, &ls->p);
}

/* The state of a read, from its struct pending_read. */
static struct limit_state *state_of(struct pending_read *r)
{
    return (struct limit_state *)((char *)r - offsetof(struct limit_state, r));
}

static enum store_result limits_read(struct pending_read *r, struct store *s)
{
    struct limit_state *ls = state_of(r);
    return store_limits(s, ls->key[0] ? ls->key : NULL, ls->now, &ls->all, &ls->n);
}

/* Start the read of ls (its key, or every limit when it has none). */
static enum MHD_Result read_start(struct request *rq, enum limit_path path)
{
    enum MHD_Result res;
    struct limit_state *ls = limit_start(rq, path, &res);
    if (!ls)
        return res;
    ls->r.read = limits_read;
    return pending_read_submit(rq, &ls->r);
}

enum MHD_Result handle_limit_get(struct request *rq)
{
    struct limit_state *ls = rq->state;
    if (!ls)
        return read_start(rq, PATH_LOOKUP);
    if (ls->r.result == STORE_OK && ls->n == 1)
        ls->out = ls->all[0];
    return limit_reply(rq, ls, ls->r.result);
}

enum MHD_Result handle_limits(struct request *rq)
{
    struct limit_state *ls = rq->state;
    if (!ls)
        return read_start(rq, PATH_NONE);
    if (ls->r.result != STORE_OK)
        return reply_store_error(rq, ls->r.result, "the limit list");
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "limits");
    for (size_t i = 0; arr && i < ls->n; i++) {
        cJSON *o = limit_json(&ls->all[i]);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(root);
        root = NULL;
    }
    return reply_json(rq, MHD_HTTP_OK, root);
}
