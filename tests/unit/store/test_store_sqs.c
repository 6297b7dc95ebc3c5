/* The SQS front end's queue rows in the store (store_sqs_queue_put, _delete,
 * store_sqs_queues), on SQLite and on PostgreSQL (test_store_util.h): a create makes the row
 * once and answers the stored row (STORE_EXISTS) after; a merge replaces the keys it gives
 * and keeps the others; the read of a name, of a prefix (a '_' in it is no wildcard) after a
 * name, bounded; a delete removes the row and leaves the jobs; a queue's RedrivePolicy moves a
 * copy of a job received maxReceiveCount times to its dead-letter queue when the lease ends
 * (fail with retry, or the sweep's expiry). */
#include <cjson/cJSON.h>

#include <stdio.h>

#include "lease.h"
#include "store_sqs.h"
#include "test_store_util.h"

/* The attribute `key` of a row's JSON object, or NULL. Owned by root. */
static const char *attr(cJSON *root, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, key));
}

TEST(create_once_then_exists)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_sqs_queue out = {0};
    CHECK_INT(store_sqs_queue_put(s, "orders", "{\"VisibilityTimeout\":\"40\"}", 1, T0, &out),
              STORE_OK);
    CHECK_STR(out.name, "orders");
    cJSON *a = cJSON_Parse(out.attributes);
    CHECK_STR(attr(a, "VisibilityTimeout"), "40");
    cJSON_Delete(a);
    int64_t created = out.created_at;
    store_sqs_queue_clear(&out);
    /* Again, with other attributes: nothing written, the stored row answered. */
    CHECK_INT(store_sqs_queue_put(s, "orders", "{\"VisibilityTimeout\":\"50\"}", 1, T0 + 5, &out),
              STORE_EXISTS);
    a = cJSON_Parse(out.attributes);
    CHECK_STR(attr(a, "VisibilityTimeout"), "40");
    cJSON_Delete(a);
    CHECK_INT(out.created_at, created);
    store_sqs_queue_clear(&out);
    store_close(s);
}

TEST(merge_replaces_given_keys)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_sqs_queue out = {0};
    CHECK_INT(store_sqs_queue_put(s, "q", "{\"A\":\"1\"}", 0, T0, &out), STORE_NOT_FOUND);
    store_sqs_queue_clear(&out);
    CHECK_INT(store_sqs_queue_put(s, "q", "{\"A\":\"1\",\"B\":\"2\"}", 1, T0, &out), STORE_OK);
    store_sqs_queue_clear(&out);
    CHECK_INT(store_sqs_queue_put(s, "q", "{\"B\":\"3\",\"C\":\"4\"}", 0, T0 + 10, &out), STORE_OK);
    cJSON *a = cJSON_Parse(out.attributes);
    CHECK_STR(attr(a, "A"), "1");
    CHECK_STR(attr(a, "B"), "3");
    CHECK_STR(attr(a, "C"), "4");
    cJSON_Delete(a);
    CHECK(out.modified_at >= out.created_at);
    store_sqs_queue_clear(&out);
    store_close(s);
}

TEST(read_by_name_and_prefix)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    static const char *const names[] = {"a_1", "a_2", "ab", "a-3", "b"};
    struct store_sqs_queue out = {0};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_INT(store_sqs_queue_put(s, names[i], "{}", 1, T0, &out), STORE_OK);
        store_sqs_queue_clear(&out);
    }
    struct store_sqs_queue *rows = NULL;
    size_t n = 0;
    CHECK_INT(store_sqs_queues(s, "ab", 1, "", 1, &rows, &n), STORE_OK);
    CHECK_INT(n, 1);
    if (n == 1)
        CHECK_STR(rows[0].name, "ab");
    store_sqs_queues_free(rows, n);
    CHECK_INT(store_sqs_queues(s, "zz", 1, "", 1, &rows, &n), STORE_OK);
    CHECK_INT(n, 0);
    store_sqs_queues_free(rows, n);
    /* "a_" is a prefix, not a pattern: ab and a-3 are not under it. */
    CHECK_INT(store_sqs_queues(s, "a_", 0, "", STORE_SQS_LIST_MAX, &rows, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(rows[0].name, "a_1");
        CHECK_STR(rows[1].name, "a_2");
    }
    store_sqs_queues_free(rows, n);
    /* Pages: after a name, at most limit. */
    CHECK_INT(store_sqs_queues(s, "", 0, "a_1", 2, &rows, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(rows[0].name, "a_2");
        CHECK_STR(rows[1].name, "ab");
    }
    store_sqs_queues_free(rows, n);
    store_close(s);
}

TEST(delete_leaves_the_jobs)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_sqs_queue out = {0};
    CHECK_INT(store_sqs_queue_put(s, "gone", "{}", 1, T0, &out), STORE_OK);
    store_sqs_queue_clear(&out);
    int64_t id = enqueue(s, "gone", 0, T0, T0);
    CHECK(id > 0);
    CHECK_INT(store_sqs_queue_delete(s, "gone", T0), STORE_OK);
    CHECK_INT(store_sqs_queue_delete(s, "gone", T0), STORE_NOT_FOUND);
    struct store_sqs_queue *rows = NULL;
    size_t n = 0;
    CHECK_INT(store_sqs_queues(s, "gone", 1, "", 1, &rows, &n), STORE_OK);
    CHECK_INT(n, 0);
    store_sqs_queues_free(rows, n);
    struct job j;
    CHECK_INT(store_get(s, id, &j), STORE_OK);
    job_clear(&j);
    store_close(s);
}

/* Claim job id of queue at now (it must be the one claimed); its lease token into token. */
static void claim_it(struct store *s, const char *queue, int64_t id, int64_t now, char *token)
{
    struct job j;
    CHECK_INT(claim_one(s, queue, now, &j), id);
    snprintf(token, JOB_TOKEN_LEN + 1, "%s", j.lease_token);
    job_clear(&j);
}

/* The source job src of a dead-letter move, and its copy (the next id: the move enqueued it),
 * checked: src failed with error_code dead_lettered, the copy queued in dlq with its payload,
 * its receive count starting again. */
static void check_moved(struct store *s, int64_t src)
{
    struct job j, copy;
    CHECK_INT(store_get(s, src, &j), STORE_OK);
    CHECK_INT(j.status, JOB_FAILED);
    CHECK_STR(j.error_code, JOB_DEAD_LETTER_CODE);
    CHECK_INT(store_get(s, src + 1, &copy), STORE_OK);
    CHECK_STR(copy.queue, "dlq");
    CHECK_INT(copy.status, JOB_QUEUED);
    CHECK_STR(copy.payload, j.payload);
    CHECK_INT(copy.attempts, 0);
    job_clear(&copy);
    job_clear(&j);
}

TEST(dead_letter_moves_a_copy_at_the_lease_end)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_sqs_queue out = {0};
    CHECK_INT(store_sqs_queue_put(s, "dlq", "{}", 1, T0, &out), STORE_OK);
    store_sqs_queue_clear(&out);
    CHECK_INT(
        store_sqs_queue_put(s, "src",
                            "{\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"arn:aws:"
                            "sqs:us-east-1:000000000000:dlq\\\",\\\"maxReceiveCount\\\":2}\"}",
                            1, T0, &out),
        STORE_OK);
    store_sqs_queue_clear(&out);
    /* Released (a fail with retry) after each of its two receives: moved by the fail. */
    int64_t a = enqueue(s, "src", 0, T0, T0);
    struct fail_req retry = {.retry = 1, .retry_in_seconds = 0};
    char token[JOB_TOKEN_LEN + 1];
    struct job j;
    for (int i = 0; i < 2; i++) {
        claim_it(s, "src", a, T0 + i, token);
        CHECK_INT(store_fail(s, a, token, &retry, T0 + i, &j), STORE_OK);
        CHECK_INT(j.status, i == 0 ? JOB_QUEUED : JOB_FAILED);
        job_clear(&j);
    }
    check_moved(s, a);
    /* Expired after each: moved by the sweep. */
    int64_t b = enqueue(s, "src", 0, T0, T0 + 3);
    struct sweep_result r;
    claim_it(s, "src", b, T0 + 10, token);
    CHECK_INT(store_sweep(s, T0 + 100, 86400, 500, &r), STORE_OK);
    CHECK_INT(status_of(s, b), JOB_QUEUED);
    claim_it(s, "src", b, T0 + 10000, token);
    CHECK_INT(store_sweep(s, T0 + 10100, 86400, 500, &r), STORE_OK);
    check_moved(s, b);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(create_once_then_exists), TEST_ENTRY(merge_replaces_given_keys),
          TEST_ENTRY(read_by_name_and_prefix), TEST_ENTRY(delete_leaves_the_jobs),
          TEST_ENTRY(dead_letter_moves_a_copy_at_the_lease_end))
