/* jobjson and the error table: the contract's job object, exact integers, the token rule. */
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "jobjson.h"
#include "reply.h"
#include "testlib.h"

#include <inttypes.h>
#include <stdio.h>

/* The reference encoder: the contract's job object built as a cJSON tree, integers as raw
 * PRId64 text. The server writes the same object directly (jtext_job); print_job() below
 * checks the two agree byte for byte. */
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
    ok = ok && add_opt_string(o, "concurrency_key", j->concurrency_key);
    ok = ok && add_opt_int(o, "expires_at", j->expires_at);
    if (ok && j->dedup_key) {
        cJSON *d = cJSON_AddObjectToObject(o, "dedup");
        ok = d && cJSON_AddStringToObject(d, "key", j->dedup_key) &&
             cJSON_AddStringToObject(d, "mode", dedup_mode_name(j->dedup_mode)) &&
             add_opt_int(d, "seconds", j->dedup_seconds);
    } else {
        ok = ok && cJSON_AddNullToObject(o, "dedup") != NULL;
    }
    ok = ok && add_raw(o, "depends_on", j->depends_on, "[]");
    ok = ok && cJSON_AddStringToObject(o, "on_dependency_failure",
                                       job_dep_mode_name(j->on_dependency_failure)) != NULL;
    ok = ok && (j->traceparent ? cJSON_AddStringToObject(o, "traceparent", j->traceparent)
                               : cJSON_AddNullToObject(o, "traceparent")) != NULL;
    ok = ok && (j->tracestate ? cJSON_AddStringToObject(o, "tracestate", j->tracestate)
                              : cJSON_AddNullToObject(o, "tracestate")) != NULL;
    if (ok && with_token && j->lease_token)
        ok = cJSON_AddStringToObject(o, "lease_token", j->lease_token) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The job as cJSON prints job_to_json(); NULL when the direct writer (jtext_job) writes
 * anything else. */
static char *print_job(const struct job *j, int with_token)
{
    cJSON *o = job_to_json(j, with_token);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    struct jtext t = {0};
    jtext_job(&t, j, with_token);
    if (text && (t.oom || !t.p || strcmp(t.p, text) != 0 || t.len != strlen(text))) {
        fprintf(stderr, "cJSON  %s\njtext  %s\n", text, t.p ? t.p : "(null)");
        free(text);
        text = NULL;
    }
    free(t.p);
    return text;
}

TEST(fresh_job_in_contract_order)
{
    struct job j = {0};
    j.id = 42;
    j.queue = "default";
    j.status = JOB_QUEUED;
    j.payload = "{\"big\":12345678901234567890}";
    j.priority = -7;
    j.run_at = 1763700000;
    j.max_attempts = 5;
    j.max_runtime_seconds = JOB_NONE;
    j.requires = NULL; /* empty: shown as [] */
    j.created_at = 1763700000;
    j.claimed_at = j.heartbeat_at = j.lease_expires_at = j.finished_at = j.expires_at = JOB_NONE;
    j.lease_token = "tok";
    char *text = print_job(&j, 0);
    CHECK(text != NULL);
    const char *want =
        "{\"id\":42,\"queue\":\"default\",\"status\":\"queued\","
        "\"payload\":{\"big\":12345678901234567890},\"priority\":-7,\"run_at\":1763700000,"
        "\"attempts\":0,\"max_attempts\":5,\"fencing_token\":0,\"max_runtime_seconds\":null,"
        "\"requires\":[],\"idempotency_key\":null,\"created_at\":1763700000,"
        "\"claimed_at\":null,\"heartbeat_at\":null,\"lease_expires_at\":null,"
        "\"worker_id\":null,\"finished_at\":null,\"result\":null,\"progress\":null,"
        "\"error_code\":null,\"error_detail\":null,\"concurrency_key\":null,"
        "\"expires_at\":null,\"dedup\":null,\"depends_on\":[],"
        "\"on_dependency_failure\":\"cancel\",\"traceparent\":null,\"tracestate\":null}";
    int same = strcmp(text, want) == 0;
    if (!same)
        fprintf(stderr, "got  %s\nwant %s\n", text, want);
    free(text);
    CHECK(same);
}

TEST(claimed_job_with_token_and_exact_ints)
{
    struct job j = {0};
    j.id = INT64_MAX;
    j.queue = "q";
    j.status = JOB_RUNNING;
    j.payload = "null";
    j.priority = 2147483647;
    j.run_at = 9007199254740993LL; /* not representable as a double */
    j.attempts = 1;
    j.max_attempts = 1000;
    j.fencing_token = 9007199254740995LL;
    j.max_runtime_seconds = 60;
    j.requires = NULL; /* shown as [] */
    j.idempotency_key = "k\"ey";
    j.claimed_at = 1;
    j.heartbeat_at = 2;
    j.lease_expires_at = 3;
    j.worker_id = "w";
    j.finished_at = JOB_NONE;
    j.result = "[1.50]";
    j.progress = "{\"p\":1}";
    j.error_code = "E";
    j.error_detail = "\"d\"";
    j.lease_token = "tok";
    j.concurrency_key = "tenant:\"1";
    j.expires_at = 4102444799;
    j.dedup_key = "d";
    j.dedup_mode = DEDUP_DEBOUNCE;
    j.dedup_seconds = 0;
    j.depends_on = "[3,9007199254740993]";
    j.on_dependency_failure = DEP_RUN;
    j.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    j.tracestate = "k=v";
    char *text = print_job(&j, 1);
    CHECK(text != NULL);
    int ok =
        strstr(text, "\"id\":9223372036854775807,") && strstr(text, "\"status\":\"running\"") &&
        strstr(text, "\"run_at\":9007199254740993,") &&
        strstr(text, "\"fencing_token\":9007199254740995,") && strstr(text, "\"requires\":[],") &&
        strstr(text, "\"idempotency_key\":\"k\\\"ey\"") && strstr(text, "\"result\":[1.50],") &&
        strstr(text, "\"error_detail\":\"d\",") &&
        strstr(text, ",\"depends_on\":[3,9007199254740993],\"on_dependency_failure\":\"run\",") &&
        strstr(text, ",\"traceparent\":\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\","
                     "\"tracestate\":\"k=v\",") &&
        strstr(text, ",\"lease_token\":\"tok\"}");
    if (!ok)
        fprintf(stderr, "got %s\n", text);
    free(text);
    CHECK(ok);
    /* Without asking, no token. */
    text = print_job(&j, 0);
    CHECK(text != NULL);
    ok = strstr(text, "lease_token") == NULL;
    free(text);
    CHECK(ok);
}

TEST(direct_text_escapes_like_cjson)
{
    struct job j = {0};
    j.id = -5;
    j.queue = "q\"\\/\b\f\n\r\t\x01\x1f\x7f \xc3\xa9";
    j.payload = "{\"a\":\"\\u0000\"}";
    j.priority = INT64_MIN + 1;
    j.run_at = JOB_NONE + 1;
    j.max_runtime_seconds = 0;
    j.claimed_at = j.heartbeat_at = j.lease_expires_at = j.finished_at = j.expires_at = JOB_NONE;
    j.worker_id = "";
    j.error_code = "\x02x";
    j.lease_token = "t\"k";
    for (int status = 0; status < JOB_STATUS_COUNT; status++) {
        j.status = (enum job_status)status;
        for (int tok = 0; tok < 2; tok++) {
            char *text = print_job(&j, tok);
            CHECK(text != NULL);
            free(text);
        }
    }
    /* A list of jobs. */
    struct job two[2] = {j, j};
    two[1].id = 7;
    struct jtext t = {0};
    jtext_jobs(&t, two, 2, 1);
    cJSON *parsed = t.p ? cJSON_Parse(t.p) : NULL;
    free(t.p);
    CHECK(parsed != NULL);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(parsed, "jobs");
    int ok =
        cJSON_GetArraySize(arr) == 2 &&
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 1), "id")->valueint == 7 &&
        strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 0), "queue")->valuestring,
               j.queue) == 0;
    cJSON_Delete(parsed);
    CHECK(ok);
    t = (struct jtext){0};
    jtext_jobs(&t, NULL, 0, 1);
    CHECK(t.p && strcmp(t.p, "{\"jobs\":[]}") == 0);
    free(t.p);
}

TEST(error_table)
{
    static const struct {
        enum err e;
        const char *code;
        unsigned status;
    } want[] = {
        {ERR_INVALID_JSON, "invalid_json", 400},
        {ERR_INVALID_REQUEST, "invalid_request", 400},
        {ERR_UNAUTHORIZED, "unauthorized", 401},
        {ERR_FORBIDDEN, "forbidden", 403},
        {ERR_NOT_FOUND, "not_found", 404},
        {ERR_METHOD_NOT_ALLOWED, "method_not_allowed", 405},
        {ERR_LEASE_LOST, "lease_lost", 409},
        {ERR_CONFLICT, "conflict", 409},
        {ERR_PAYLOAD_TOO_LARGE, "payload_too_large", 413},
        {ERR_UNSUPPORTED_MEDIA, "unsupported_media_type", 415},
        {ERR_UNAVAILABLE, "unavailable", 503},
        {ERR_INTERNAL, "internal", 500},
    };
    CHECK_INT(sizeof want / sizeof want[0], ERR_COUNT);
    for (size_t i = 0; i < ERR_COUNT; i++) {
        CHECK_STR(err_code(want[i].e), want[i].code);
        CHECK_INT(err_status(want[i].e), want[i].status);
    }
    CHECK_STR(err_code(ERR_COUNT), "internal");
}

/* GET /jobs/{id}/dependencies and /dependents: id, status, result (null or as stored), queue,
 * and "more" only for dependents. */
TEST(links)
{
    struct job_link l[2] = {{3, JOB_SUCCEEDED, "{\"n\":1.50}", "q\"1"},
                            {9, JOB_BLOCKED, NULL, "default"}};
    struct jtext t = {0};
    jtext_links(&t, "dependencies", l, 2, -1);
    CHECK(t.p != NULL);
    int ok = strcmp(t.p, "{\"dependencies\":[{\"id\":3,\"status\":\"succeeded\",\"result\":{"
                         "\"n\":1.50},\"queue\":\"q\\\"1\"},{\"id\":9,\"status\":\"blocked\","
                         "\"result\":null,\"queue\":\"default\"}]}") == 0;
    if (!ok)
        fprintf(stderr, "got %s\n", t.p);
    free(t.p);
    CHECK(ok);
    t = (struct jtext){0};
    jtext_links(&t, "dependents", NULL, 0, 1);
    CHECK(t.p && strcmp(t.p, "{\"dependents\":[],\"more\":true}") == 0);
    free(t.p);
    t = (struct jtext){0};
    jtext_links(&t, "dependents", l + 1, 1, 0);
    CHECK(t.p && strstr(t.p, "],\"more\":false}") != NULL);
    free(t.p);
}

TEST_MAIN(TEST_ENTRY(fresh_job_in_contract_order),
          TEST_ENTRY(claimed_job_with_token_and_exact_ints),
          TEST_ENTRY(direct_text_escapes_like_cjson), TEST_ENTRY(error_table), TEST_ENTRY(links))
