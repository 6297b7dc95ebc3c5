/* The contract's job object (see jobjson.h). Integers are added as raw text printed with
 * PRId64, so int64 values are exact (cJSON would print them as doubles); JSON-text fields
 * are embedded verbatim. */
#include "jobjson.h"

#include <inttypes.h>
#include <stdio.h>

static int add_int(cJSON *obj, const char *name, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_AddRawToObject(obj, name, buf) != NULL;
}

/* An integer, or null when v is JOB_NONE. */
static int add_opt_int(cJSON *obj, const char *name, int64_t v)
{
    if (v == JOB_NONE)
        return cJSON_AddNullToObject(obj, name) != NULL;
    return add_int(obj, name, v);
}

/* A string, or null when s is NULL. */
static int add_opt_string(cJSON *obj, const char *name, const char *s)
{
    if (!s)
        return cJSON_AddNullToObject(obj, name) != NULL;
    return cJSON_AddStringToObject(obj, name, s) != NULL;
}

/* JSON text embedded as is, or `fallback` (itself JSON text) when text is NULL. */
static int add_raw(cJSON *obj, const char *name, const char *text, const char *fallback)
{
    return cJSON_AddRawToObject(obj, name, text ? text : fallback) != NULL;
}

cJSON *job_to_json(const struct job *j, int with_token)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    /* The contract's order. */
    int ok = add_int(o, "id", j->id);
    ok = ok && add_opt_string(o, "queue", j->queue);
    ok = ok && cJSON_AddStringToObject(o, "status", job_status_name(j->status)) != NULL;
    ok = ok && add_raw(o, "payload", j->payload, "null");
    ok = ok && add_int(o, "priority", j->priority);
    ok = ok && add_int(o, "run_at", j->run_at);
    ok = ok && add_int(o, "attempts", j->attempts);
    ok = ok && add_int(o, "max_attempts", j->max_attempts);
    ok = ok && add_int(o, "fencing_token", j->fencing_token);
    ok = ok && add_opt_int(o, "max_runtime_seconds", j->max_runtime_seconds);
    ok = ok && add_raw(o, "requires", j->requires, "[]");
    ok = ok && add_opt_string(o, "idempotency_key", j->idempotency_key);
    ok = ok && add_int(o, "created_at", j->created_at);
    ok = ok && add_opt_int(o, "claimed_at", j->claimed_at);
    ok = ok && add_opt_int(o, "heartbeat_at", j->heartbeat_at);
    ok = ok && add_opt_int(o, "lease_expires_at", j->lease_expires_at);
    ok = ok && add_opt_string(o, "worker_id", j->worker_id);
    ok = ok && add_opt_int(o, "finished_at", j->finished_at);
    ok = ok && add_raw(o, "result", j->result, "null");
    ok = ok && add_raw(o, "progress", j->progress, "null");
    ok = ok && add_opt_string(o, "error_code", j->error_code);
    ok = ok && add_raw(o, "error_detail", j->error_detail, "null");
    if (ok && with_token && j->lease_token)
        ok = cJSON_AddStringToObject(o, "lease_token", j->lease_token) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
