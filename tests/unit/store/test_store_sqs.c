/* The SQS front end's queue rows in the store (store_sqs_queue_put, _delete,
 * store_sqs_queues), on SQLite and on PostgreSQL (test_store_util.h): a create makes the row
 * once and answers the stored row (STORE_EXISTS) after; a merge replaces the keys it gives
 * and keeps the others; the read of a name, of a prefix (a '_' in it is no wildcard) after a
 * name, bounded; a delete removes the row and leaves the jobs. */
#include <cjson/cJSON.h>

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

TEST_MAIN(TEST_ENTRY(create_once_then_exists), TEST_ENTRY(merge_replaces_given_keys),
          TEST_ENTRY(read_by_name_and_prefix), TEST_ENTRY(delete_leaves_the_jobs))
