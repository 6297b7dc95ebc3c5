/* Webhook endpoints (../shared/API.md "Events, webhooks and trace context"; docs/events.md
 * "Webhooks"): PUT /webhooks/{name} (create or replace), GET /webhooks, GET
 * /webhooks/{name}, DELETE /webhooks/{name}. Writes go through store_submit, reads through
 * the reader threads. A secret is shown once: in the answer of the PUT that generated it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "event.h"
#include "fields.h"
#include "handlers.h"
#include "pending.h"
#include "reply.h"
#include "store_webhook.h"
#include "webhook.h"
#include "whpost.h"
#include "whsign.h"

#define WEBHOOKS_PATH "/webhooks/"

/* Add name: v, or null when v is none; 0 when out of memory. */
static int add_int(cJSON *o, const char *name, int64_t v, int64_t none)
{
    if (v == none)
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddNumberToObject(o, name, (double)v) != NULL;
}

static int add_text(cJSON *o, const char *name, const char *v)
{
    return (v ? cJSON_AddStringToObject(o, name, v) : cJSON_AddNullToObject(o, name)) != NULL;
}

/* The types of bits as an array (null: every type). */
static int add_types(cJSON *o, unsigned bits)
{
    if (!bits)
        return cJSON_AddNullToObject(o, "types") != NULL;
    cJSON *a = cJSON_AddArrayToObject(o, "types");
    for (int t = 1; a && t < JOB_EVENT_TYPE_COUNT; t++)
        if (bits & (1u << t) &&
            !cJSON_AddItemToArray(a, cJSON_CreateString(job_event_name((enum job_event_type)t))))
            return 0;
    return a != NULL;
}

/* The queues of the comma-separated list q as an array (null: every queue). */
static int add_queues(cJSON *o, const char *q)
{
    if (!q)
        return cJSON_AddNullToObject(o, "queues") != NULL;
    cJSON *a = cJSON_AddArrayToObject(o, "queues");
    while (a && *q) {
        size_t n = strcspn(q, ",");
        char name[JOB_QUEUE_MAX + 1];
        snprintf(name, sizeof name, "%.*s", (int)n, q);
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(name)))
            return 0;
        q += n + (q[n] == ',');
    }
    return a != NULL;
}

/* A subscription's object (secret: shown when not NULL), or NULL when out of memory. */
static cJSON *webhook_json(const struct store_webhook *w, const char *secret, int64_t now)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", w->name) &&
             cJSON_AddStringToObject(o, "url", w->url) && add_types(o, w->types) &&
             add_queues(o, w->queues) && cJSON_AddBoolToObject(o, "enabled", w->enabled) &&
             cJSON_AddBoolToObject(o, "ordered", w->ordered);
    ok = ok && (!secret || cJSON_AddStringToObject(o, "secret", secret));
    int rotating = w->prev_secret && w->prev_until != JOB_NONE && w->prev_until > now;
    ok = ok && add_int(o, "previous_secret_until", rotating ? w->prev_until : JOB_NONE, JOB_NONE);
    ok = ok && add_int(o, "delivered_seq", w->delivered_seq, JOB_NONE);
    ok = ok && add_int(o, "failing_since", w->failing_since, JOB_NONE);
    ok = ok && add_int(o, "next_attempt_at", w->next_attempt_at, JOB_NONE);
    ok = ok && add_int(o, "attempts", w->attempts, JOB_NONE);
    ok = ok && add_int(o, "last_status", w->last_status, JOB_NONE);
    ok = ok && add_text(o, "last_error", w->last_error);
    ok = ok && add_int(o, "last_attempt_at", w->last_attempt_at, JOB_NONE);
    ok = ok && add_text(o, "disabled_reason", w->disabled_reason);
    ok = ok && add_int(o, "deliveries", w->deliveries, JOB_NONE);
    ok = ok && add_int(o, "failures", w->failures, JOB_NONE);
    ok = ok && add_int(o, "failed_events", w->failed_events, JOB_NONE);
    ok = ok && add_int(o, "parked", w->nparked_all, JOB_NONE);
    ok = ok && add_int(o, "retry_at", w->retry_at, JOB_NONE);
    ok = ok && add_int(o, "created_at", w->created_at, JOB_NONE);
    ok = ok && add_int(o, "updated_at", w->updated_at, JOB_NONE);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A webhook call or read across its calls. */
struct wh_state {
    struct pending p;      /* writes */
    struct pending_read r; /* reads (r.read is set) */
    struct store_webhook_call wc;
    char name[JOB_QUEUE_MAX + 1];
    int64_t now;
    struct store_webhook in, out;      /* put: the body (in owns its texts); put, delete: answer */
    char fresh[WHSIGN_SECRET_MAX + 1]; /* put: a generated secret */
    struct store_webhook *all;         /* reads: n of them, owned */
    size_t n;
};

static void wh_state_free(void *arg)
{
    struct wh_state *ws = arg;
    if (!ws)
        return;
    store_webhook_clear(&ws->in);
    store_webhook_clear(&ws->out);
    store_webhooks_free(ws->all, ws->n);
    free(ws);
}

/* How a request names a subscription in its path. */
enum webhook_path {
    PATH_NONE,   /* GET /webhooks */
    PATH_PUT,    /* a name that cannot be valid is invalid_request */
    PATH_LOOKUP, /* GET, DELETE: a name that cannot be valid names none (not_found) */
};

/* A new state for rq with its path name (or none), or an answer in *res. */
static struct wh_state *webhook_start(struct request *rq, enum webhook_path path,
                                      enum MHD_Result *res)
{
    const char *s = rq->url + strlen(WEBHOOKS_PATH);
    size_t n = path != PATH_NONE ? strlen(s) : 0;
    if (path != PATH_NONE &&
        (n == 0 || n > JOB_QUEUE_MAX || memchr(s, '/', n) || !job_queue_name_ok(s))) {
        char why[64], rule[128];
        fields_queue_why(s, n, why, sizeof why);
        snprintf(rule, sizeof rule, "a webhook name is 1-%d characters of A-Z a-z 0-9 . _ : - (%s)",
                 JOB_QUEUE_MAX, why);
        *res = path == PATH_LOOKUP
                   ? reply_error(rq, ERR_NOT_FOUND, "no webhook can have this name: %s", rule)
                   : reply_error(rq, ERR_INVALID_REQUEST, "name: %s", rule);
        return NULL;
    }
    struct wh_state *ws = calloc(1, sizeof *ws);
    if (!ws) {
        *res = reply_error(rq, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    memcpy(ws->name, s, n);
    ws->now = clock_now();
    rq->state = ws;
    rq->state_free = wh_state_free;
    return ws;
}

/* types: an array of event type names into *bits (absent, null or empty: every type). */
static int read_types(struct fields *f, unsigned *bits)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(f->obj, "types");
    *bits = 0;
    if (!a || cJSON_IsNull(a))
        return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > JOB_EVENT_TYPE_COUNT - 1)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "types: an array of at most %d event types (job.created, ...)",
                           JOB_EVENT_TYPE_COUNT - 1);
    int i = 0;
    for (const cJSON *t = a->child; t; t = t->next, i++) {
        enum job_event_type type = cJSON_IsString(t)
                                       ? job_event_parse(t->valuestring, strlen(t->valuestring))
                                       : JOB_EVENT_NONE;
        if (type == JOB_EVENT_NONE)
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "types[%d]: not an event type (job.created, job.blocked, "
                               "job.released, job.claimed, job.succeeded, job.failed, "
                               "job.requeued, job.retried, job.snoozed, job.cancelled)",
                               i);
        *bits |= 1u << type;
    }
    return 0;
}

/* queues: an array of queue names, joined with commas into *out (absent: NULL, every queue). */
static int read_queues(struct fields *f, char **out)
{
    const char *q[EVENT_QUEUES_MAX];
    size_t n = 0;
    int has = fields_queue_list(f, "queues", q, EVENT_QUEUES_MAX, &n);
    *out = NULL;
    if (has <= 0)
        return has;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(q[i]) + 1;
    if (!(*out = malloc(len)))
        return fields_fail(f, ERR_INTERNAL, "out of memory");
    char *p = *out;
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i ? "," : "", q[i]);
    return 0;
}

/* The body of PUT /webhooks/{name} into ws->in, or -1 with f's error set. */
static int read_webhook_body(struct fields *f, struct wh_state *ws, int allow_private)
{
    struct store_webhook *in = &ws->in;
    const char *url = NULL, *secret = NULL;
    int enabled = 1, ordered = 0;
    int has = fields_string(f, "url", 1, WEBHOOK_URL_MAX, &url);
    if (has == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "url: required (an http:// or https:// URL)");
    if (has < 0 || fields_string(f, "secret", 1, WHSIGN_SECRET_MAX, &secret) < 0 ||
        fields_bool(f, "enabled", &enabled) < 0 || fields_bool(f, "ordered", &ordered) < 0 ||
        read_types(f, &in->types) < 0 || read_queues(f, &in->queues) < 0)
        return -1;
    struct webhook_url u;
    char why[WHPOST_ERROR_MAX];
    if (webhook_url_parse(url, &u, why, sizeof why) != 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "url: %s", why);
    if (!allow_private && whpost_check(&u, 0, why, sizeof why) == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "url: %s", why);
    unsigned char key[WHSIGN_KEY_MAX];
    if (secret && whsign_key(secret, key) < 0)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "secret: whsec_ followed by the standard base64 (padded) of %d-%d "
                           "random bytes",
                           WHSIGN_KEY_MIN, WHSIGN_KEY_MAX);
    memcpy(in->name, ws->name, sizeof in->name);
    in->url = strdup(url);
    in->secret = secret ? strdup(secret) : NULL;
    in->enabled = enabled;
    in->ordered = ordered;
    if (!in->url || (secret && !in->secret))
        return fields_fail(f, ERR_INTERNAL, "out of memory");
    if (!secret && whsign_secret_new(ws->fresh) != 0)
        return fields_fail(f, ERR_INTERNAL, "no randomness for a secret");
    return 0;
}

/* Answer a webhook write or single read that is over. */
static enum MHD_Result webhook_reply(struct request *rq, struct wh_state *ws, enum store_result r)
{
    if (r == STORE_NOT_FOUND)
        return reply_error(rq, ERR_NOT_FOUND, "no webhook named %s", ws->name);
    if (r == STORE_CONFLICT)
        return reply_error(rq, ERR_CONFLICT,
                           "name: at most %d webhooks may exist; delete one before adding %s",
                           STORE_WEBHOOKS_MAX, ws->name);
    if (r != STORE_OK)
        return reply_store_error(rq, r, "the webhook");
    /* The generated secret is shown once: to the PUT that created the subscription with it. */
    const char *shown =
        ws->wc.op == STORE_WEBHOOK_PUT && ws->wc.created && !ws->in.secret ? ws->fresh : NULL;
    return reply_json(rq, ws->wc.created ? MHD_HTTP_CREATED : MHD_HTTP_OK,
                      webhook_json(&ws->out, shown, ws->now));
}

enum MHD_Result handle_webhook_put(struct request *rq)
{
    struct wh_state *ws = rq->state;
    if (ws)
        return webhook_reply(rq, ws, ws->p.call.result);
    enum MHD_Result res;
    if (!(ws = webhook_start(rq, PATH_PUT, &res)))
        return res;
    struct fields f;
    cJSON *root = NULL;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0 ||
        read_webhook_body(&f, ws, rq->app->cfg->webhook_allow_private) < 0) {
        cJSON_Delete(root);
        return fields_reply(rq, &f);
    }
    cJSON_Delete(root);
    ws->wc = (struct store_webhook_call){.op = STORE_WEBHOOK_PUT,
                                         .name = ws->name,
                                         .in = &ws->in,
                                         .fresh_secret = ws->fresh,
                                         .out = &ws->out};
    ws->p.call =
        (struct store_call){.kind = STORE_CALL_WEBHOOK, .now = ws->now, .webhook = &ws->wc};
    return pending_submit(rq, &ws->p);
}

enum MHD_Result handle_webhook_delete(struct request *rq)
{
    struct wh_state *ws = rq->state;
    if (ws)
        return webhook_reply(rq, ws, ws->p.call.result);
    enum MHD_Result res;
    if (!(ws = webhook_start(rq, PATH_LOOKUP, &res)))
        return res;
    ws->wc =
        (struct store_webhook_call){.op = STORE_WEBHOOK_DELETE, .name = ws->name, .out = &ws->out};
    ws->p.call =
        (struct store_call){.kind = STORE_CALL_WEBHOOK, .now = ws->now, .webhook = &ws->wc};
    return pending_submit(rq, &ws->p);
}

/* The state of a read, from its struct pending_read. */
static struct wh_state *state_of(struct pending_read *r)
{
    return (struct wh_state *)((char *)r - offsetof(struct wh_state, r));
}

static enum store_result webhooks_read(struct pending_read *r, struct store *s)
{
    struct wh_state *ws = state_of(r);
    return store_webhooks(s, ws->name[0] ? ws->name : NULL, &ws->all, &ws->n);
}

static enum MHD_Result read_start(struct request *rq, enum webhook_path path)
{
    enum MHD_Result res;
    struct wh_state *ws = webhook_start(rq, path, &res);
    if (!ws)
        return res;
    ws->r.read = webhooks_read;
    return pending_read_submit(rq, &ws->r);
}

enum MHD_Result handle_webhook_get(struct request *rq)
{
    struct wh_state *ws = rq->state;
    if (!ws)
        return read_start(rq, PATH_LOOKUP);
    if (ws->r.result != STORE_OK)
        return webhook_reply(rq, ws, ws->r.result);
    return reply_json(rq, MHD_HTTP_OK, webhook_json(&ws->all[0], NULL, ws->now));
}

enum MHD_Result handle_webhooks(struct request *rq)
{
    struct wh_state *ws = rq->state;
    if (!ws)
        return read_start(rq, PATH_NONE);
    if (ws->r.result != STORE_OK)
        return reply_store_error(rq, ws->r.result, "the webhook list");
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "webhooks");
    for (size_t i = 0; arr && i < ws->n; i++) {
        cJSON *o = webhook_json(&ws->all[i], NULL, ws->now);
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
