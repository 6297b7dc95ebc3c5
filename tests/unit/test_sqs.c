/* The SQS front end's pure parts: the digests (MD5 of a body, AWS's digest of message
 * attributes), the query-protocol form reader and its XML, the queue attributes' checks and
 * the body's allowed characters, the copies of queue rows. The clients that check these in earnest run in
 * tests/blackbox/test_sqs.py. */
#include <stdlib.h>
#include <string.h>

#include "limit.h"
#include "sha256.h"
#include "sqs_attrs.h"
#include "sqs_cache.h"
#include "sqs_msg.h"
#include "sqs_query.h"
#include "sqs_redrive.h"
#include "testlib.h"

TEST(md5_of_bodies)
{
    char out[33];
    sqs_md5_hex("", 0, out);
    CHECK_STR(out, "d41d8cd98f00b204e9800998ecf8427e");
    sqs_md5_hex("hello", 5, out);
    CHECK_STR(out, "5d41402abc4b2a76b9719d911017c592");
    /* Past one 64-byte block, and at the padding's edge (56 bytes). */
    char a[1000];
    memset(a, 'a', sizeof a);
    sqs_md5_hex(a, 56, out);
    CHECK_STR(out, "3b0c8ac703f828b04c6c197006d17218");
    sqs_md5_hex(a, 1000, out);
    CHECK_STR(out, "cabe45dcc9ae5b66ba86600cca6b8ba8");
}

TEST(md5_of_message_attributes)
{
    char out[33];
    /* The digest the AWS SDK for JavaScript checked (tests/blackbox/test_sqs.py). */
    cJSON *a = cJSON_Parse("{\"a\":{\"DataType\":\"String\",\"StringValue\":\"x\"}}");
    CHECK_INT(sqs_msg_attrs_md5(a, out), 0);
    CHECK_STR(out, "a512aac9938034acb0b3c3d965944bf1");
    cJSON_Delete(a);
    /* Order-free: sorted by name. */
    cJSON *x = cJSON_Parse("{\"b\":{\"DataType\":\"Number\",\"StringValue\":\"1\"},"
                           "\"a\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAH/\"}}");
    cJSON *y = cJSON_Parse("{\"a\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAH/\"},"
                           "\"b\":{\"DataType\":\"Number\",\"StringValue\":\"1\"}}");
    char ox[33], oy[33];
    CHECK_INT(sqs_msg_attrs_md5(x, ox), 0);
    CHECK_INT(sqs_msg_attrs_md5(y, oy), 0);
    CHECK_STR(ox, oy);
    cJSON_Delete(x);
    cJSON_Delete(y);
    /* None: no digest. */
    cJSON *none = cJSON_CreateObject();
    CHECK_INT(sqs_msg_attrs_md5(none, out), -1);
    CHECK_INT(sqs_msg_attrs_md5(NULL, out), -1);
    cJSON_Delete(none);
}

TEST(message_attributes_checked)
{
    static const char *const bad[] = {
        "{\"AWS.x\":{\"DataType\":\"String\",\"StringValue\":\"v\"}}",
        "{\"a..b\":{\"DataType\":\"String\",\"StringValue\":\"v\"}}",
        "{\"a\":{\"DataType\":\"Str\",\"StringValue\":\"v\"}}",
        "{\"a\":{\"DataType\":\"String\",\"StringValue\":\"\"}}",
        "{\"a\":{\"DataType\":\"Binary\",\"BinaryValue\":\"not base64!\"}}",
        "[]",
    };
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *a = cJSON_Parse(bad[i]);
        size_t bytes = 0;
        err[0] = '\0';
        CHECK_INT(sqs_msg_attrs_check(a, &bytes, err, sizeof err), -1);
        CHECK(err[0] != '\0');
        cJSON_Delete(a);
    }
    cJSON *ok = cJSON_Parse("{\"n\":{\"DataType\":\"Number.float\",\"StringValue\":\"1.5\"}}");
    size_t bytes = 0;
    CHECK_INT(sqs_msg_attrs_check(ok, &bytes, err, sizeof err), 0);
    CHECK_INT(bytes, strlen("n") + strlen("Number.float") + strlen("1.5"));
    cJSON_Delete(ok);
}

TEST(body_characters)
{
    CHECK_INT(sqs_body_ok("a\tb\n\r", 5), 1);
    CHECK_INT(sqs_body_ok("\xf0\x9f\x98\x80", 4), 1);
    CHECK_INT(sqs_body_ok("a\x01", 2), 0);
    CHECK_INT(sqs_body_ok("\xef\xbf\xbe", 3), 0); /* U+FFFE */
    CHECK_INT(sqs_body_ok("\xc3", 1), 0);         /* cut short */
}

TEST(form_into_json_parameters)
{
    static const char form[] =
        "Action=SendMessageBatch&QueueUrl=http%3A%2F%2Fh%2F0%2Fq&"
        "SendMessageBatchRequestEntry.10.Id=ten&SendMessageBatchRequestEntry.10.MessageBody=b+c&"
        "SendMessageBatchRequestEntry.2.Id=two&SendMessageBatchRequestEntry.2.MessageBody=x&"
        "SendMessageBatchRequestEntry.2.MessageAttribute.1.Name=k&"
        "SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType=String&"
        "SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue=v&"
        "AttributeName.2=B&AttributeName.1=A&Attribute.1.Name=VisibilityTimeout&"
        "Attribute.1.Value=5";
    cJSON *p = sqs_query_params(form, strlen(form));
    CHECK(p != NULL);
    char *text = cJSON_PrintUnformatted(p);
    CHECK_STR(text,
              "{\"Action\":\"SendMessageBatch\",\"QueueUrl\":\"http://h/0/q\","
              "\"AttributeNames\":[\"A\",\"B\"],"
              "\"Attributes\":{\"VisibilityTimeout\":\"5\"},"
              "\"Entries\":[{\"Id\":\"two\",\"MessageBody\":\"x\","
              "\"MessageAttributes\":{\"k\":{\"DataType\":\"String\",\"StringValue\":\"v\"}}},"
              "{\"Id\":\"ten\",\"MessageBody\":\"b c\"}]}");
    free(text);
    cJSON_Delete(p);
    static const char *const bad[] = {
        "a=1&a=2",           "a=1&a.b=2",          "a=%zz", "a=%00", "AttributeName.0=x",
        "AttributeName.x=y", "Attribute.1.Value=5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *b = sqs_query_params(bad[i], strlen(bad[i]));
        if (b)
            fprintf(stderr, "accepted %s\n", bad[i]);
        CHECK(b == NULL);
        cJSON_Delete(b);
    }
}

TEST(json_answer_as_xml)
{
    cJSON *a = cJSON_Parse("{\"Messages\":[{\"Body\":\"<&>\",\"Attributes\":{\"SenderId\":\"j\"},"
                           "\"MessageAttributes\":{\"k\":{\"DataType\":\"String\","
                           "\"StringValue\":\"v\"}}}]}");
    char *xml = sqs_query_answer("ReceiveMessage", a, "rid");
    CHECK(xml != NULL);
    CHECK(strstr(xml, "<ReceiveMessageResult><Message><Body>&lt;&amp;&gt;</Body>") != NULL);
    CHECK(strstr(xml, "<Attribute><Name>SenderId</Name><Value>j</Value></Attribute>") != NULL);
    CHECK(strstr(xml, "<MessageAttribute><Name>k</Name><Value><DataType>String</DataType>"
                      "<StringValue>v</StringValue></Value></MessageAttribute>") != NULL);
    CHECK(strstr(xml, "<RequestId>rid</RequestId>") != NULL);
    free(xml);
    cJSON_Delete(a);
    /* An empty answer still has its Result element. */
    xml = sqs_query_answer("ReceiveMessage", NULL, "rid");
    CHECK(strstr(xml, "<ReceiveMessageResult></ReceiveMessageResult>") != NULL);
    free(xml);
}

TEST(queue_attributes)
{
    char err[256];
    int bad_name = 0;
    cJSON *g = cJSON_Parse("{\"VisibilityTimeout\":\"43201\"}");
    CHECK_INT(sqs_attrs_check(g, &bad_name, err, sizeof err), -1);
    CHECK_INT(bad_name, 0);
    cJSON_Delete(g);
    g = cJSON_Parse("{\"QueueArn\":\"x\"}");
    CHECK_INT(sqs_attrs_check(g, &bad_name, err, sizeof err), -1);
    CHECK_INT(bad_name, 1);
    cJSON_Delete(g);
    /* A default stands for an attribute not given. */
    g = cJSON_Parse("{\"VisibilityTimeout\":\"30\"}");
    CHECK_INT(sqs_attrs_check(g, &bad_name, err, sizeof err), 0);
    CHECK_INT(sqs_attrs_match(g, "{}"), 1);
    CHECK_INT(sqs_attrs_match(g, "{\"VisibilityTimeout\":\"31\"}"), 0);
    cJSON_Delete(g);
    struct sqs_queue q;
    sqs_queue_read(&q, "q", "{\"DelaySeconds\":\"7\",\"VisibilityTimeout\":\"junk\"}", 1, 2);
    CHECK_INT(q.delay, 7);
    CHECK_INT(q.visibility, 30); /* unreadable: the default */
    CHECK_INT(q.max_size, 262144);
}

/* The copies of queue rows: a hit within the TTL, a miss after it or after a forget, and a
 * read that started before a forget is not kept. */
TEST(queue_row_cache)
{
    struct sqs_cache *c = sqs_cache_new();
    CHECK(c != NULL);
    struct sqs_queue q, got;
    char stored[SQS_CACHE_STORED_MAX + 1];
    sqs_queue_read(&q, "orders", "{\"VisibilityTimeout\":\"7\"}", 10, 20);
    CHECK_INT(sqs_cache_get(c, "orders", 1000, &got, stored), 0);
    sqs_cache_put(c, &q, 1000);
    CHECK_INT(sqs_cache_get(c, "orders", 1000 + SQS_CACHE_TTL_MS - 1, &got, stored), 1);
    CHECK_STR(got.name, "orders");
    CHECK_INT(got.visibility, 7);
    CHECK_STR(got.stored, "{\"VisibilityTimeout\":\"7\"}");
    CHECK(got.stored == stored);
    CHECK_INT(sqs_cache_get(c, "orders", 1000 + SQS_CACHE_TTL_MS, &got, stored), 0);
    CHECK_INT(sqs_cache_get(c, "other", 1001, &got, stored), 0);
    sqs_cache_forget(c, "orders", 1002);
    CHECK_INT(sqs_cache_get(c, "orders", 1003, &got, stored), 0);
    sqs_cache_put(c, &q, 1002); /* read before (or as) the change committed: not kept */
    CHECK_INT(sqs_cache_get(c, "orders", 1004, &got, stored), 0);
    sqs_cache_put(c, &q, 1003);
    CHECK_INT(sqs_cache_get(c, "orders", 1004, &got, stored), 1);
    /* Stored attributes over the bound are not kept. */
    static char big[SQS_CACHE_STORED_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    sqs_queue_read(&q, "big", big, 0, 0);
    sqs_cache_put(c, &q, 2000);
    CHECK_INT(sqs_cache_get(c, "big", 2001, &got, stored), 0);
    sqs_cache_free(c);
    sqs_cache_free(NULL);
    CHECK_INT(sqs_cache_get(NULL, "orders", 1, &got, stored), 0);
}

TEST(sha256_of_bodies)
{
    /* Empty, short, at the padding's edges (55 and 56 bytes) and past one 64-byte block. */
    static const struct {
        size_t n;
        const char *hex;
    } cases[] = {
        {0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {1000, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
    };
    char a[1000], out[65];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sha256_hex_of(a, cases[i].n, out);
        CHECK_STR(out, cases[i].hex);
    }
    sha256_hex_of("abc", 3, out);
    CHECK_STR(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(fifo_group_keys_and_sequence_numbers)
{
    char key[JOB_IDENT_MAX + 1];
    sqs_fifo_key("orders.fifo", "g1", key);
    CHECK_STR(key, "fifo:orders.fifo/g1");
    CHECK(limit_key_ordered(key));
    /* A group that would make the key too long is named by its SHA-256. */
    char q[81], g[129];
    memset(q, 'q', 75);
    strcpy(q + 75, ".fifo");
    memset(g, 'g', 128);
    g[128] = '\0';
    sqs_fifo_key(q, g, key);
    CHECK_INT((long)strlen(key), 5 + 80 + 2 + 64);
    CHECK(strstr(key, "/#5bf1fee04a85c12d427a8ae8515261e447a953140ea3e8c9fe7f1fd5d745e415"));
    char seq[SQS_SEQUENCE_LEN + 1];
    sqs_sequence_number(42, seq);
    CHECK_STR(seq, "00000000000000000042");
}

TEST(fifo_queue_attributes)
{
    char err[256];
    cJSON *fifo = cJSON_Parse("{\"FifoQueue\":\"true\"}");
    cJSON *cbd = cJSON_Parse("{\"ContentBasedDeduplication\":\"true\"}");
    CHECK_INT(sqs_attrs_check_fifo(fifo, "a.fifo", 1, 0, err, sizeof err), SQS_FIFO_OK);
    CHECK_INT(sqs_attrs_check_fifo(fifo, "a", 1, 0, err, sizeof err), SQS_FIFO_BAD_VALUE);
    CHECK_INT(sqs_attrs_check_fifo(NULL, "a.fifo", 1, 0, err, sizeof err), SQS_FIFO_BAD_VALUE);
    CHECK_INT(sqs_attrs_check_fifo(cbd, "a", 1, 0, err, sizeof err), SQS_FIFO_BAD_NAME);
    CHECK_INT(sqs_attrs_check_fifo(cbd, "a.fifo", 0, 1, err, sizeof err), SQS_FIFO_OK);
    CHECK_INT(sqs_attrs_check_fifo(cbd, "a", 0, 0, err, sizeof err), SQS_FIFO_BAD_NAME);
    CHECK_INT(sqs_attrs_check_fifo(fifo, "a.fifo", 0, 1, err, sizeof err), SQS_FIFO_BAD_NAME);
    cJSON_Delete(fifo);
    cJSON_Delete(cbd);
    struct sqs_queue q;
    char v[64];
    sqs_queue_read(&q, "a.fifo", "{\"FifoQueue\":\"true\"}", 1, 2);
    CHECK_INT(q.fifo, 1);
    CHECK_INT(q.dedup_by_content, 0);
    CHECK_INT(sqs_attr_value(&q, (size_t)sqs_attr_find("ContentBasedDeduplication"), v, sizeof v),
              0);
    CHECK_STR(v, "false");
    sqs_queue_read(&q, "a", "{}", 1, 2);
    CHECK_INT(q.fifo, 0);
    /* A standard queue shows no FIFO attribute. */
    CHECK_INT(sqs_attr_value(&q, (size_t)sqs_attr_find("FifoQueue"), v, sizeof v), -1);
}

TEST(redrive_policies)
{
    char err[256];
    struct sqs_redrive r;
    CHECK_INT(sqs_redrive_parse("{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:d\","
                                "\"maxReceiveCount\":\"5\"}",
                                &r, err, sizeof err),
              0);
    CHECK_STR(r.target, "d");
    CHECK_INT(r.max_receive, 5);
    CHECK_INT(sqs_redrive_parse("", &r, err, sizeof err), 0); /* removes the policy */
    CHECK_STR(r.target, "");
    static const char *bad[] = {
        "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:d\",\"maxReceiveCount\":0}",
        "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:d\",\"maxReceiveCount\":"
        "1001}",
        "{\"deadLetterTargetArn\":\"arn:aws:sqs:eu-west-1:1:d\",\"maxReceiveCount\":1}",
        "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:b "
        "d\",\"maxReceiveCount\":1}",
        "{\"maxReceiveCount\":1}",
        "[]",
        "not json"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(sqs_redrive_parse(bad[i], &r, err, sizeof err), -1);
    CHECK_INT(sqs_redrive_allow_check("{\"redrivePermission\":\"denyAll\"}", err, sizeof err), 0);
    CHECK_INT(sqs_redrive_allow_check("{\"redrivePermission\":\"byQueue\"}", err, sizeof err), -1);
    /* A target takes a source of its own kind that its RedriveAllowPolicy allows. */
    CHECK_INT(sqs_redrive_target_ok("s", 0, "t", "{}", err, sizeof err), 0);
    CHECK_INT(sqs_redrive_target_ok("s.fifo", 1, "t", "{}", err, sizeof err), -1);
    CHECK_INT(sqs_redrive_target_ok("s", 0, "t",
                                    "{\"RedriveAllowPolicy\":\"{\\\"redrivePermission\\\":"
                                    "\\\"denyAll\\\"}\"}",
                                    err, sizeof err),
              -1);
}

TEST_MAIN(TEST_ENTRY(md5_of_bodies), TEST_ENTRY(redrive_policies), TEST_ENTRY(sha256_of_bodies),
          TEST_ENTRY(fifo_group_keys_and_sequence_numbers), TEST_ENTRY(fifo_queue_attributes),
          TEST_ENTRY(md5_of_message_attributes), TEST_ENTRY(message_attributes_checked),
          TEST_ENTRY(body_characters), TEST_ENTRY(form_into_json_parameters),
          TEST_ENTRY(json_answer_as_xml), TEST_ENTRY(queue_attributes), TEST_ENTRY(queue_row_cache))
