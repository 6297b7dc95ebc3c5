/* fields and parse: the body pipeline and every limit, without a connection. */
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "parse.h"
#include "testlib.h"

#define NOW 1763700000LL

/* Parse body into f/root. Returns 0 or -1 like fields_parse_body(). */
static int open_body(struct fields *f, cJSON **root, const char *body)
{
    return fields_parse_body(f, root, body, body ? strlen(body) : 0);
}

/* The parsed body behind the last spec_of(): spec strings borrow from it. */
static cJSON *spec_root;

/* Run parse_job_spec on body; on failure the message goes to msg. Returns the result. The
 * previous call's body is released. */
static int spec_of(const char *body, struct job_spec *spec, struct spec_buf *buf, char *msg,
                   size_t msglen)
{
    struct fields f;
    cJSON_Delete(spec_root);
    spec_root = NULL;
    memset(buf, 0, sizeof *buf);
    int r = open_body(&f, &spec_root, body);
    if (r == 0)
        r = parse_job_spec(&f, spec, buf);
    snprintf(msg, msglen, "%s", r < 0 ? f.msg : "");
    return r;
}

/* Release what spec_of() keeps. */
static void spec_done(struct spec_buf *buf)
{
    spec_buf_clear(buf);
    cJSON_Delete(spec_root);
    spec_root = NULL;
}

/* 1 when body is rejected as invalid_request and the message mentions `field`. */
static int spec_bad(const char *body, const char *field)
{
    struct job_spec spec;
    struct spec_buf buf = {0};
    char msg[256];
    int r = spec_of(body, &spec, &buf, msg, sizeof msg);
    spec_done(&buf);
    if (r == 0 || (field && !strstr(msg, field))) {
        fprintf(stderr, "body %s: r=%d msg=\"%s\", want a message naming %s\n", body, r, msg,
                field ? field : "(any)");
        return 0;
    }
    return 1;
}

TEST(body_pipeline)
{
    struct fields f;
    cJSON *root;
    CHECK_INT(open_body(&f, &root, NULL), 0); /* empty body is {} */
    CHECK(cJSON_IsObject(root));
    cJSON_Delete(root);
    CHECK_INT(open_body(&f, &root, "  {\"a\": 1} \n"), 0);
    cJSON_Delete(root);

    const char *bad_json[] = {"{",    "{\"a\":1,}", "{\"a\":01}",       "{\"a\":NaN}",
                              "{} x", " ",          "{\"a\":\"\xff\"}", "{\"a\":\"\\ud800\"}"};
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        CHECK_INT(open_body(&f, &root, bad_json[i]), -1);
        CHECK_INT(f.code, ERR_INVALID_JSON);
        CHECK(root == NULL);
    }
    const char *not_object[] = {"[]", "[1]", "1", "\"x\"", "null", "true"};
    for (size_t i = 0; i < sizeof not_object / sizeof not_object[0]; i++) {
        CHECK_INT(open_body(&f, &root, not_object[i]), -1);
        CHECK_INT(f.code, ERR_INVALID_REQUEST);
        CHECK(strstr(f.msg, "object") != NULL);
    }
}

TEST(depth_is_invalid_json)
{
    char body[512];
    size_t n = (size_t)sprintf(body, "{\"payload\":");
    for (int i = 0; i < 64; i++)
        body[n++] = '[';
    for (int i = 0; i < 64; i++)
        body[n++] = ']';
    body[n++] = '}';
    body[n] = '\0';
    struct fields f;
    cJSON *root;
    CHECK_INT(open_body(&f, &root, body), -1); /* 65 levels */
    CHECK_INT(f.code, ERR_INVALID_JSON);
    /* 64 levels: drop one bracket pair. */
    memmove(body + 11, body + 12, strlen(body + 12) + 1);
    memmove(body + 11 + 63, body + 11 + 64, strlen(body + 11 + 64) + 1);
    CHECK_INT(open_body(&f, &root, body), 0);
    cJSON_Delete(root);
}

TEST(job_spec_defaults_and_exact_payload)
{
    struct job_spec spec;
    struct spec_buf buf;
    char msg[256];
    CHECK_INT(spec_of("{\"payload\": {\"big\" : 12345678901234567890, \"s\": \"a  b\\u00e9\"}}",
                      &spec, &buf, msg, sizeof msg),
              0);
    CHECK_STR(spec.queue, "default");
    CHECK_STR(spec.payload, "{\"big\":12345678901234567890,\"s\":\"a  b\\u00e9\"}");
    CHECK_INT(spec.priority, 0);
    CHECK(spec.run_at == JOB_NONE); /* due at the store's now */
    CHECK_INT(spec.delay, 0);
    CHECK_INT(spec.max_attempts, 5);
    CHECK(spec.max_runtime_seconds == JOB_NONE);
    CHECK(spec.requires == NULL);
    CHECK(spec.idempotency_key == NULL);
    spec_done(&buf);

    /* A present null is a valid payload; other nulls are absent. */
    CHECK_INT(spec_of("{\"payload\": null, \"priority\": null, \"queue\": null, \"requires\": "
                      "null, \"idempotency_key\": null, \"run_at\": null}",
                      &spec, &buf, msg, sizeof msg),
              0);
    CHECK_STR(spec.payload, "null");
    CHECK_STR(spec.queue, "default");
    spec_done(&buf);
}

TEST(job_spec_all_fields)
{
    struct job_spec spec;
    struct spec_buf buf;
    char msg[256];
    CHECK_INT(spec_of("{\"queue\":\"AZaz09._:-\",\"payload\":[1, 2],\"priority\":-7,"
                      "\"run_at\":1763700100,\"max_attempts\":1000,\"max_runtime_seconds\":60,"
                      "\"requires\":[\"x86\",\"gpu\",\"x86\"],\"idempotency_key\":\"k\","
                      "\"Priority\": \"ignored\", \"colour\": [1]}",
                      &spec, &buf, msg, sizeof msg),
              0);
    CHECK_STR(spec.queue, "AZaz09._:-");
    CHECK_STR(spec.payload, "[1,2]");
    CHECK_INT(spec.priority, -7);
    CHECK_INT(spec.run_at, 1763700100);
    CHECK_INT(spec.delay, 0);
    CHECK_INT(spec.max_attempts, 1000);
    CHECK_INT(spec.max_runtime_seconds, 60);
    CHECK_STR(spec.requires, "[\"gpu\",\"x86\"]"); /* deduplicated, sorted */
    CHECK_STR(spec.idempotency_key, "k");
    spec_done(&buf);

    CHECK_INT(spec_of("{\"payload\":1,\"delay_seconds\":50,\"priority\":2147483647,"
                      "\"requires\":[]}",
                      &spec, &buf, msg, sizeof msg),
              0);
    CHECK(spec.run_at == JOB_NONE); /* the store adds the delay to its own now */
    CHECK_INT(spec.delay, 50);
    CHECK_INT(spec.priority, 2147483647);
    CHECK(spec.requires == NULL); /* empty is none */
    spec_done(&buf);

    /* Integral numbers in other spellings are integers. */
    CHECK_INT(spec_of("{\"payload\":1,\"priority\":-2147483648,\"max_attempts\":1e2,"
                      "\"max_runtime_seconds\":60.0}",
                      &spec, &buf, msg, sizeof msg),
              0);
    CHECK_INT(spec.priority, -2147483647LL - 1);
    CHECK_INT(spec.max_attempts, 100);
    CHECK_INT(spec.max_runtime_seconds, 60);
    spec_done(&buf);
}

TEST(job_spec_limits)
{
    CHECK(spec_bad("{}", "payload"));
    CHECK(spec_bad("{\"queue\":\"q\"}", "payload"));
    CHECK(spec_bad("{\"payload\":1,\"queue\":\"\"}", "queue"));
    CHECK(spec_bad("{\"payload\":1,\"queue\":\"has space\"}", "queue"));
    CHECK(spec_bad("{\"payload\":1,\"queue\":\"caf\xc3\xa9\"}", "queue"));
    CHECK(spec_bad("{\"payload\":1,\"queue\":5}", "queue"));
    CHECK(spec_bad("{\"payload\":1,\"queue\":[\"a\"]}", "queue"));
    CHECK(spec_bad("{\"payload\":1,\"queue\":\"de\\u0000x\"}", "queue"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":2147483648}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":-2147483649}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":9223372036854775808}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":1.5}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":1e400}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":-1e400}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":\"1\"}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"priority\":true}", "priority"));
    CHECK(spec_bad("{\"payload\":1,\"max_attempts\":0}", "max_attempts"));
    CHECK(spec_bad("{\"payload\":1,\"max_attempts\":1001}", "max_attempts"));
    CHECK(spec_bad("{\"payload\":1,\"max_runtime_seconds\":0}", "max_runtime_seconds"));
    CHECK(spec_bad("{\"payload\":1,\"max_runtime_seconds\":2592001}", "max_runtime_seconds"));
    CHECK(spec_bad("{\"payload\":1,\"delay_seconds\":-1}", "delay_seconds"));
    CHECK(spec_bad("{\"payload\":1,\"delay_seconds\":31536001}", "delay_seconds"));
    CHECK(spec_bad("{\"payload\":1,\"run_at\":-1}", "run_at"));
    CHECK(spec_bad("{\"payload\":1,\"run_at\":1763700000.5}", "run_at"));
    CHECK(spec_bad("{\"payload\":1,\"run_at\":4611686018427387904}", "run_at"));
    CHECK(spec_bad("{\"payload\":1,\"run_at\":1763700000,\"delay_seconds\":5}", "delay_seconds"));
    /* A debounce decides when the job is due: any delay_seconds beside it is refused, 0 too;
     * a null one is absent. */
    CHECK(spec_bad("{\"payload\":1,\"delay_seconds\":0,\"dedup\":{\"key\":\"k\",\"mode\":"
                   "\"debounce\",\"seconds\":1}}",
                   "debounce"));
    CHECK(spec_bad("{\"payload\":1,\"run_at\":0,\"dedup\":{\"key\":\"k\",\"mode\":"
                   "\"debounce\",\"seconds\":1}}",
                   "debounce"));
    {
        struct job_spec spec;
        struct spec_buf buf = {0};
        char msg[256];
        CHECK_INT(spec_of("{\"payload\":1,\"run_at\":null,\"delay_seconds\":null,\"dedup\":"
                          "{\"key\":\"k\",\"mode\":\"debounce\",\"seconds\":1}}",
                          &spec, &buf, msg, sizeof msg),
                  0);
        spec_done(&buf);
    }
    CHECK(spec_bad("{\"payload\":1,\"idempotency_key\":\"\"}", "idempotency_key"));
    CHECK(spec_bad("{\"payload\":1,\"idempotency_key\":17}", "idempotency_key"));
    CHECK(spec_bad("{\"payload\":1,\"idempotency_key\":\"a\\u0000b\"}", "idempotency_key"));
    CHECK(spec_bad("{\"payload\":1,\"requires\":\"gpu\"}", "requires"));
    CHECK(spec_bad("{\"payload\":1,\"requires\":[\"\"]}", "requires"));
    CHECK(spec_bad("{\"payload\":1,\"requires\":[1]}", "requires"));
    CHECK(spec_bad("{\"payload\":1,\"requires\":[null]}", "requires"));
    CHECK(spec_bad("{\"payload\":1,\"requires\":[\"a\\u0000\"]}", "requires"));

    /* At the limits. */
    char body[8192];
    struct job_spec spec;
    struct spec_buf buf;
    char msg[256];
    char q[130], key[202], tag[66];
    memset(q, 'q', 128);
    q[128] = '\0';
    snprintf(body, sizeof body, "{\"payload\":1,\"queue\":\"%s\"}", q);
    CHECK_INT(spec_of(body, &spec, &buf, msg, sizeof msg), 0);
    spec_done(&buf);
    strcat(q, "q");
    snprintf(body, sizeof body, "{\"payload\":1,\"queue\":\"%s\"}", q);
    CHECK(spec_bad(body, "queue"));

    memset(key, 'k', 200);
    key[200] = '\0';
    snprintf(body, sizeof body, "{\"payload\":1,\"idempotency_key\":\"%s\"}", key);
    CHECK_INT(spec_of(body, &spec, &buf, msg, sizeof msg), 0);
    spec_done(&buf);
    strcat(key, "k");
    snprintf(body, sizeof body, "{\"payload\":1,\"idempotency_key\":\"%s\"}", key);
    CHECK(spec_bad(body, "idempotency_key"));
    /* Bytes, not characters: 101 two-byte characters are 202 bytes. */
    size_t n = (size_t)snprintf(body, sizeof body, "{\"payload\":1,\"idempotency_key\":\"");
    for (int i = 0; i < 101; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, "\xc3\xa9");
    snprintf(body + n, sizeof body - n, "\"}");
    CHECK(spec_bad(body, "idempotency_key"));

    memset(tag, 't', 64);
    tag[64] = '\0';
    snprintf(body, sizeof body, "{\"payload\":1,\"requires\":[\"%s\"]}", tag);
    CHECK_INT(spec_of(body, &spec, &buf, msg, sizeof msg), 0);
    spec_done(&buf);
    strcat(tag, "t");
    snprintf(body, sizeof body, "{\"payload\":1,\"requires\":[\"%s\"]}", tag);
    CHECK(spec_bad(body, "requires"));

    for (int count = 32; count <= 33; count++) {
        n = (size_t)snprintf(body, sizeof body, "{\"payload\":1,\"requires\":[");
        for (int i = 0; i < count; i++)
            n += (size_t)snprintf(body + n, sizeof body - n, "%s\"t%d\"", i ? "," : "", i);
        snprintf(body + n, sizeof body - n, "]}");
        if (count == 32) {
            CHECK_INT(spec_of(body, &spec, &buf, msg, sizeof msg), 0);
            spec_done(&buf);
        } else {
            CHECK(spec_bad(body, "requires"));
        }
    }
}

TEST(prefix_names_batch_element)
{
    const char *body = "{\"priority\": 1.5, \"payload\": 1}";
    cJSON *root = cJSON_Parse(body);
    struct fields f;
    struct jspan span = {body, strlen(body)};
    fields_init(&f, root, span, "jobs[3].");
    struct job_spec spec;
    struct spec_buf buf;
    CHECK_INT(parse_job_spec(&f, &spec, &buf), -1);
    spec_buf_clear(&buf);
    cJSON_Delete(root);
    CHECK(strstr(f.msg, "jobs[3].priority") != NULL);
    CHECK_INT(f.code, ERR_INVALID_REQUEST);
}

/* parse_claim on body; returns its result, message in msg. */
static int claim_of(const char *body, struct claim_args *c, char *msg, size_t msglen, cJSON **root)
{
    struct fields f;
    *root = NULL;
    int r = open_body(&f, root, body);
    if (r == 0)
        r = parse_claim(&f, c);
    else
        memset(c, 0, sizeof *c);
    snprintf(msg, msglen, "%s", r < 0 ? f.msg : "");
    return r;
}

static int claim_bad(const char *body, const char *field)
{
    struct claim_args c;
    char msg[256];
    cJSON *root;
    int r = claim_of(body, &c, msg, sizeof msg, &root);
    claim_args_clear(&c);
    cJSON_Delete(root);
    if (r == 0 || (field && !strstr(msg, field))) {
        fprintf(stderr, "claim %s: r=%d msg=\"%s\"\n", body, r, msg);
        return 0;
    }
    return 1;
}

TEST(claim_args)
{
    struct claim_args c;
    char msg[256];
    cJSON *root;
    CHECK_INT(claim_of("{\"worker_id\":\"w\"}", &c, msg, sizeof msg, &root), 0);
    CHECK_STR(c.worker_id, "w");
    CHECK_INT(c.nqueues, 1);
    CHECK_STR(c.queues[0], "default");
    CHECK_INT(c.lease_seconds, 30);
    CHECK_INT(c.max_jobs, 1);
    CHECK_INT(c.wait_seconds, 0);
    CHECK(c.capabilities == NULL);
    claim_args_clear(&c);
    cJSON_Delete(root);

    CHECK_INT(claim_of("{\"worker_id\":\"w\",\"queues\":[\"b\",\"a\",\"b\"],\"lease_seconds\":"
                       "86400,\"max_jobs\":100,\"wait_seconds\":60,\"capabilities\":[\"z\","
                       "\"a\"],\"queue\":null}",
                       &c, msg, sizeof msg, &root),
              0);
    CHECK_INT(c.nqueues, 2);
    CHECK_STR(c.queues[0], "b");
    CHECK_STR(c.queues[1], "a");
    CHECK_INT(c.lease_seconds, 86400);
    CHECK_INT(c.max_jobs, 100);
    CHECK_INT(c.wait_seconds, 60);
    CHECK_STR(c.capabilities, "[\"a\",\"z\"]");
    claim_args_clear(&c);
    cJSON_Delete(root);

    CHECK(claim_bad("{}", "worker_id"));
    CHECK(claim_bad("{\"worker_id\":null}", "worker_id"));
    CHECK(claim_bad("{\"worker_id\":\"\"}", "worker_id"));
    CHECK(claim_bad("{\"worker_id\":7}", "worker_id"));
    CHECK(claim_bad("{\"worker_id\":\"w\\u0000\"}", "worker_id"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"queue\":\"a\",\"queues\":[\"a\"]}", "queue"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"queues\":[]}", "queues"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"queues\":\"a\"}", "queues"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"queues\":[\"ok\",\"bad name\"]}", "queues"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"queues\":[\"ok\",5]}", "queues"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"queue\":\"bad name\"}", "queue"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"lease_seconds\":0}", "lease_seconds"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"lease_seconds\":86401}", "lease_seconds"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"max_jobs\":0}", "max_jobs"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"max_jobs\":101}", "max_jobs"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"wait_seconds\":61}", "wait_seconds"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"wait_seconds\":-1}", "wait_seconds"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"capabilities\":\"gpu\"}", "capabilities"));
    CHECK(claim_bad("{\"worker_id\":\"w\",\"capabilities\":[\"\"]}", "capabilities"));

    char body[1024];
    for (int count = 32; count <= 33; count++) {
        size_t n = (size_t)snprintf(body, sizeof body, "{\"worker_id\":\"w\",\"queues\":[");
        for (int i = 0; i < count; i++)
            n += (size_t)snprintf(body + n, sizeof body - n, "%s\"q%d\"", i ? "," : "", i);
        snprintf(body + n, sizeof body - n, "]}");
        if (count == 32) {
            CHECK_INT(claim_of(body, &c, msg, sizeof msg, &root), 0);
            CHECK_INT(c.nqueues, 32);
            claim_args_clear(&c);
            cJSON_Delete(root);
        } else {
            CHECK(claim_bad(body, "queues"));
        }
    }
}

/* Run one of the lease parsers on body. */
static int lease_of(int (*parse)(struct fields *, struct lease_args *), const char *body,
                    struct lease_args *a, char *msg, cJSON **root)
{
    struct fields f;
    int r = open_body(&f, root, body);
    memset(a, 0, sizeof *a);
    if (r == 0)
        r = parse(&f, a);
    snprintf(msg, 256, "%s", r < 0 ? f.msg : "");
    return r;
}

TEST(lease_bodies)
{
    struct lease_args a;
    char msg[256];
    cJSON *root;
    int (*parsers[])(struct fields *, struct lease_args *) = {parse_heartbeat, parse_complete,
                                                              parse_fail, parse_snooze};
    for (size_t i = 0; i < sizeof parsers / sizeof parsers[0]; i++) {
        CHECK_INT(lease_of(parsers[i], "{}", &a, msg, &root), -1);
        CHECK(strstr(msg, "lease_token") != NULL);
        lease_args_clear(&a);
        cJSON_Delete(root);
        CHECK_INT(lease_of(parsers[i], "{\"lease_token\":5}", &a, msg, &root), -1);
        CHECK(strstr(msg, "lease_token") != NULL);
        lease_args_clear(&a);
        cJSON_Delete(root);
    }

    CHECK_INT(lease_of(parse_heartbeat, "{\"lease_token\":\"t\",\"progress\":{ \"n\" : 1.50 }}", &a,
                       msg, &root),
              0);
    CHECK_STR(a.lease_token, "t");
    CHECK_INT(a.lease_seconds, 0);
    CHECK_STR(a.json, "{\"n\":1.50}");
    lease_args_clear(&a);
    cJSON_Delete(root);
    CHECK_INT(lease_of(parse_heartbeat, "{\"lease_token\":\"t\",\"lease_seconds\":86401}", &a, msg,
                       &root),
              -1);
    CHECK(strstr(msg, "lease_seconds") != NULL);
    lease_args_clear(&a);
    cJSON_Delete(root);

    CHECK_INT(lease_of(parse_complete, "{\"lease_token\":\"t\",\"result\":null}", &a, msg, &root),
              0);
    CHECK(a.json == NULL);
    lease_args_clear(&a);
    cJSON_Delete(root);

    CHECK_INT(lease_of(parse_fail, "{\"lease_token\":\"t\"}", &a, msg, &root), 0);
    CHECK_INT(a.fail.retry, 1);
    CHECK_INT(a.fail.retry_in_seconds, -1);
    CHECK(a.fail.error_code == NULL);
    CHECK(a.fail.error_detail == NULL);
    lease_args_clear(&a);
    cJSON_Delete(root);
    CHECK_INT(lease_of(parse_fail,
                       "{\"lease_token\":\"t\",\"retry\":false,\"retry_in_seconds\":31536000,"
                       "\"error_code\":\"E\",\"error_detail\":[1, \"x\"]}",
                       &a, msg, &root),
              0);
    CHECK_INT(a.fail.retry, 0);
    CHECK_INT(a.fail.retry_in_seconds, 31536000);
    CHECK_STR(a.fail.error_code, "E");
    CHECK_STR(a.fail.error_detail, "[1,\"x\"]");
    lease_args_clear(&a);
    cJSON_Delete(root);

    const char *bad[][2] = {
        {"{\"lease_token\":\"t\",\"retry\":\"yes\"}", "retry"},
        {"{\"lease_token\":\"t\",\"retry_in_seconds\":-1}", "retry_in_seconds"},
        {"{\"lease_token\":\"t\",\"retry_in_seconds\":31536001}", "retry_in_seconds"},
        {"{\"lease_token\":\"t\",\"error_code\":5}", "error_code"},
        {"{\"lease_token\":\"t\",\"error_code\":\"\"}", "error_code"},
        {"{\"lease_token\":\"t\",\"error_code\":\"a\\u0000\"}", "error_code"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(lease_of(parse_fail, bad[i][0], &a, msg, &root), -1);
        CHECK(strstr(msg, bad[i][1]) != NULL);
        lease_args_clear(&a);
        cJSON_Delete(root);
    }
}

TEST(snooze_body)
{
    struct lease_args a;
    char msg[256];
    cJSON *root;
    CHECK_INT(lease_of(parse_snooze, "{\"lease_token\":\"t\",\"seconds\":0}", &a, msg, &root), 0);
    CHECK_STR(a.lease_token, "t");
    CHECK_INT(a.seconds, 0);
    CHECK_INT(a.pause_key, 0);
    lease_args_clear(&a);
    cJSON_Delete(root);
    CHECK_INT(lease_of(parse_snooze,
                       "{\"lease_token\":\"t\",\"seconds\":31536000,\"pause_key\":true}", &a, msg,
                       &root),
              0);
    CHECK_INT(a.seconds, 31536000);
    CHECK_INT(a.pause_key, 1);
    lease_args_clear(&a);
    cJSON_Delete(root);
    const char *bad[][2] = {
        {"{\"lease_token\":\"t\"}", "seconds is required"},
        {"{\"lease_token\":\"t\",\"seconds\":null}", "seconds is required"},
        {"{\"lease_token\":\"t\",\"seconds\":-1}", "seconds"},
        {"{\"lease_token\":\"t\",\"seconds\":31536001}", "seconds"},
        {"{\"lease_token\":\"t\",\"seconds\":1.5}", "seconds"},
        {"{\"lease_token\":\"t\",\"seconds\":1,\"pause_key\":1}", "pause_key"},
        {"{\"seconds\":1}", "lease_token"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(lease_of(parse_snooze, bad[i][0], &a, msg, &root), -1);
        CHECK(strstr(msg, bad[i][1]) != NULL);
        lease_args_clear(&a);
        cJSON_Delete(root);
    }
}

/* parse_job_spec on body. Returns its result; the message goes to msg. */
static int spec_at(const char *body, char *msg, size_t msglen)
{
    struct fields f;
    cJSON *root = NULL;
    struct job_spec spec;
    struct spec_buf buf = {0};
    int r = open_body(&f, &root, body);
    if (r == 0)
        r = parse_job_spec(&f, &spec, &buf);
    snprintf(msg, msglen, "%s", r < 0 ? f.msg : "");
    spec_buf_clear(&buf);
    cJSON_Delete(root);
    return r;
}

TEST(run_at_bound_is_fixed)
{
    /* The bound is the epoch 4102444800 (2100-01-01 UTC) whatever the clock says (the parser
     * takes no clock), so that a schema can state it. */
    char msg[256];
    CHECK_INT(spec_at("{\"payload\":1,\"run_at\":4102444799}", msg, sizeof msg), 0);
    CHECK_INT(spec_at("{\"payload\":1,\"run_at\":0}", msg, sizeof msg), 0);
    CHECK_INT(spec_at("{\"payload\":1,\"run_at\":4102444800}", msg, sizeof msg), -1);
    CHECK(strstr(msg, "run_at must be an integer between 0 and 4102444799") != NULL);
    CHECK_INT(JOB_RUN_AT_MAX, 4102444799LL);
}

/* A string field holding \u0000 is refused with a message naming the field and the NUL. */
TEST(nul_is_named)
{
    const char *spec_bodies[][2] = {
        {"{\"payload\":1,\"queue\":\"q\\u0000\"}", "queue"},
        {"{\"payload\":1,\"idempotency_key\":\"k\\u0000\"}", "idempotency_key"},
        {"{\"payload\":1,\"requires\":[\"gpu\",\"a\\u0000b\"]}", "requires"},
    };
    const char *claim_bodies[][2] = {
        {"{\"worker_id\":\"\\u0000\"}", "worker_id"},
        {"{\"worker_id\":\"w\",\"queue\":\"\\u0000\"}", "queue"},
        {"{\"worker_id\":\"w\",\"queues\":[\"a\",\"b\\u0000\"]}", "queues"},
        {"{\"worker_id\":\"w\",\"capabilities\":[\"\\u0000\"]}", "capabilities"},
    };
    const char *fail_bodies[][2] = {
        {"{\"lease_token\":\"t\\u0000\"}", "lease_token"},
        {"{\"lease_token\":\"t\",\"error_code\":\"e\\u0000\"}", "error_code"},
    };
    char msg[256], want[64];
    cJSON *root;
    for (size_t i = 0; i < sizeof spec_bodies / sizeof spec_bodies[0]; i++) {
        CHECK_INT(spec_at(spec_bodies[i][0], msg, sizeof msg), -1);
        snprintf(want, sizeof want, "%s must not contain a NUL character", spec_bodies[i][1]);
        CHECK(strstr(msg, want) != NULL);
    }
    for (size_t i = 0; i < sizeof claim_bodies / sizeof claim_bodies[0]; i++) {
        struct claim_args c;
        CHECK_INT(claim_of(claim_bodies[i][0], &c, msg, sizeof msg, &root), -1);
        claim_args_clear(&c);
        cJSON_Delete(root);
        snprintf(want, sizeof want, "%s must not contain a NUL character", claim_bodies[i][1]);
        CHECK(strstr(msg, want) != NULL);
    }
    for (size_t i = 0; i < sizeof fail_bodies / sizeof fail_bodies[0]; i++) {
        struct lease_args a;
        CHECK_INT(lease_of(parse_fail, fail_bodies[i][0], &a, msg, &root), -1);
        lease_args_clear(&a);
        cJSON_Delete(root);
        snprintf(want, sizeof want, "%s must not contain a NUL character", fail_bodies[i][1]);
        CHECK(strstr(msg, want) != NULL);
    }
}

static int list_of(const char *queue, const char *status, const char *limit, const char *cursor,
                   struct list_filter *out, char *msg)
{
    struct fields f;
    struct jspan none = {"", 0};
    fields_init(&f, NULL, none, NULL);
    int r = parse_list_query(&f, queue, status, limit, cursor, out);
    snprintf(msg, 256, "%s", r < 0 ? f.msg : "");
    return r;
}

TEST(queue_refusal_names_the_character)
{
    char why[64];
    const char *cases[][2] = {
        {"has space", "it holds ' ' at byte 3"},
        {"caf\xc3\xa9", "it holds U+00E9 at byte 3"},
        {"a\tb", "it holds U+0009 at byte 1"},
        {"x\xf0\x9f\x98\x80", "it holds U+1F600 at byte 1"},
        {"bad\xff", "it holds the byte 0xFF at byte 3"},
        {"a%00", "it holds '%' at byte 1"},
        {"", "it is empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fields_queue_why(cases[i][0], strlen(cases[i][0]), why, sizeof why);
        CHECK_STR(why, cases[i][1]);
    }
    char longq[JOB_QUEUE_MAX + 2];
    memset(longq, 'q', sizeof longq - 1);
    longq[sizeof longq - 1] = '\0';
    fields_queue_why(longq, strlen(longq), why, sizeof why);
    CHECK_STR(why, "it is 129 bytes long");

    /* Each reader of a queue name says so. */
    char msg[256];
    CHECK_INT(spec_at("{\"payload\":1,\"queue\":\"a b\"}", msg, sizeof msg), -1);
    CHECK(strstr(msg, "queue must be 1 to 128 characters") != NULL);
    CHECK(strstr(msg, "(it holds ' ' at byte 1)") != NULL);
    CHECK_INT(spec_at("{\"payload\":1,\"queue\":7}", msg, sizeof msg), -1);
    CHECK(strstr(msg, "(it is not a string)") != NULL);
    struct claim_args c;
    cJSON *root;
    CHECK_INT(claim_of("{\"worker_id\":\"w\",\"queues\":[\"ok\",\"n\u00e9\"]}", &c, msg, sizeof msg,
                       &root),
              -1);
    claim_args_clear(&c);
    cJSON_Delete(root);
    CHECK(strstr(msg, "queues[1] must be 1 to 128 characters") != NULL);
    CHECK(strstr(msg, "(it holds U+00E9 at byte 1)") != NULL);
    struct list_filter lf;
    CHECK_INT(list_of("a/b", NULL, NULL, NULL, &lf, msg), -1);
    CHECK(strstr(msg, "(it holds '/' at byte 1)") != NULL);
}

TEST(list_query)
{
    struct list_filter lf;
    char msg[256];
    CHECK_INT(list_of(NULL, NULL, NULL, NULL, &lf, msg), 0);
    CHECK(lf.queue == NULL);
    CHECK_INT(lf.status, -1);
    CHECK_INT(lf.limit, 100);
    CHECK_INT(lf.after_id, 0);

    char cursor[24];
    cursor_format(123456789, cursor, sizeof cursor);
    CHECK_INT(list_of("q", "running", "1000", cursor, &lf, msg), 0);
    CHECK_STR(lf.queue, "q");
    CHECK_INT(lf.status, JOB_RUNNING);
    CHECK_INT(lf.limit, 1000);
    CHECK_INT(lf.after_id, 123456789);
    CHECK_INT(list_of(NULL, "queued", "1", NULL, &lf, msg), 0);
    CHECK_INT(lf.status, JOB_QUEUED);
    CHECK_INT(lf.limit, 1);

    const char *limits[] = {"0", "1001", "-1", "abc", "1.5", "", " 1", "99999999999"};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        CHECK_INT(list_of(NULL, NULL, limits[i], NULL, &lf, msg), -1);
        CHECK(strstr(msg, "limit") != NULL);
    }
    const char *statuses[] = {"bogus", "QUEUED", "", "scheduled"};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        CHECK_INT(list_of(NULL, statuses[i], NULL, NULL, &lf, msg), -1);
        CHECK(strstr(msg, "status") != NULL);
    }
    const char *cursors[] = {"",  "!!not-a-cursor!!", "%%%",          "0", "00a",
                             "A", "zzzzzzzzzzzzz",    "1y2p0ij32e8e8"};
    for (size_t i = 0; i < sizeof cursors / sizeof cursors[0]; i++) {
        CHECK_INT(list_of(NULL, NULL, NULL, cursors[i], &lf, msg), -1);
        CHECK(strstr(msg, "cursor") != NULL);
    }
    CHECK_INT(list_of("bad name", NULL, NULL, NULL, &lf, msg), -1);
    CHECK(strstr(msg, "queue") != NULL);
}

TEST(cursor_round_trip)
{
    int64_t ids[] = {1, 35, 36, 1000, 123456789012345LL, INT64_MAX};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char buf[24];
        int64_t back = 0;
        cursor_format(ids[i], buf, sizeof buf);
        CHECK(strspn(buf, "0123456789abcdefghijklmnopqrstuvwxyz") == strlen(buf));
        CHECK_INT(cursor_parse(buf, &back), 0);
        CHECK(back == ids[i]);
    }
    int64_t v;
    CHECK_INT(cursor_parse("1y2p0ij32e8e7", &v), 0); /* INT64_MAX */
    CHECK(v == INT64_MAX);
    CHECK_INT(cursor_parse("1y2p0ij32e8e8", &v), -1); /* one past */
}

TEST_MAIN(TEST_ENTRY(body_pipeline), TEST_ENTRY(depth_is_invalid_json),
          TEST_ENTRY(job_spec_defaults_and_exact_payload), TEST_ENTRY(job_spec_all_fields),
          TEST_ENTRY(job_spec_limits), TEST_ENTRY(prefix_names_batch_element),
          TEST_ENTRY(claim_args), TEST_ENTRY(lease_bodies), TEST_ENTRY(snooze_body),
          TEST_ENTRY(list_query), TEST_ENTRY(cursor_round_trip), TEST_ENTRY(run_at_bound_is_fixed),
          TEST_ENTRY(nul_is_named), TEST_ENTRY(queue_refusal_names_the_character))
