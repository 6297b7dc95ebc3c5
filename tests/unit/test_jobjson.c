/* jobjson and the error table: the contract's job object, exact integers, the token rule. */
#include <stdlib.h>
#include <string.h>

#include "jobjson.h"
#include "reply.h"
#include "testlib.h"

static char *print_job(const struct job *j, int with_token)
{
    cJSON *o = job_to_json(j, with_token);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

TEST(fresh_job_in_contract_order)
{
    struct job j = {0};
    j.id = 42;
    j.queue = "default";
    j.status = JOB_SCHEDULED;
    j.payload = "{\"big\":12345678901234567890}";
    j.priority = -7;
    j.run_at = 1763700000;
    j.max_attempts = 5;
    j.max_runtime_seconds = JOB_NONE;
    j.requires = "[]";
    j.created_at = 1763700000;
    j.claimed_at = j.heartbeat_at = j.lease_expires_at = j.finished_at = JOB_NONE;
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
        "\"error_code\":null,\"error_detail\":null}";
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
    char *text = print_job(&j, 1);
    CHECK(text != NULL);
    int ok =
        strstr(text, "\"id\":9223372036854775807,") && strstr(text, "\"status\":\"running\"") &&
        strstr(text, "\"run_at\":9007199254740993,") &&
        strstr(text, "\"fencing_token\":9007199254740995,") && strstr(text, "\"requires\":[],") &&
        strstr(text, "\"idempotency_key\":\"k\\\"ey\"") && strstr(text, "\"result\":[1.50],") &&
        strstr(text, "\"error_detail\":\"d\",") && strstr(text, ",\"lease_token\":\"tok\"}");
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

TEST_MAIN(TEST_ENTRY(fresh_job_in_contract_order),
          TEST_ENTRY(claimed_job_with_token_and_exact_ints), TEST_ENTRY(error_table))
