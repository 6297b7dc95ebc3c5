/* AWS Signature Version 4 (server/domain/sigv4.h) and SHA-256 (sha256.h): AWS's published
 * example (IAM ListUsers, "Create a signed AWS API request", with the example secret
 * wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY): its canonical request, its signature; the
 * Authorization header's parse and its bounds; and the digests' standard vectors. */
#include <string.h>

#include "sigv4.h"
#include "testlib.h"

#define EXAMPLE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define EXAMPLE_AUTH                                                                               \
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "                \
    "SignedHeaders=content-type;host;x-amz-date, "                                                 \
    "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static const char *const example_headers[][2] = {
    {"content-type", "application/x-www-form-urlencoded; charset=utf-8"},
    {"host", "iam.amazonaws.com"},
    {"x-amz-date", "20150830T123600Z"},
    {NULL, NULL},
};

/* The header `name` of cls, a list of {name, value} that ends with {NULL, NULL}. */
static int example_header(void *cls, const char *name, struct sigv4_span *v)
{
    const char *const(*h)[2] = cls;
    for (size_t i = 0; h[i][0]; i++) {
        if (strcmp(h[i][0], name) == 0) {
            *v = (struct sigv4_span){h[i][1], strlen(h[i][1])};
            return 0;
        }
    }
    return -1;
}

static struct sigv4_span sp(const char *s)
{
    return (struct sigv4_span){s, strlen(s)};
}

TEST(sha256_vectors)
{
    unsigned char d[SHA256_LEN];
    char hex[SHA256_HEX_LEN + 1];
    sha256("", 0, d);
    sha256_hex(d, hex);
    CHECK_STR(hex, EMPTY_SHA256);
    sha256("abc", 3, d);
    sha256_hex(d, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256(two, strlen(two), d);
    sha256_hex(d, hex);
    CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* RFC 4231 test case 2: HMAC with a short key. */
    const char *msg = "what do ya want for nothing?";
    sha256_hmac("Jefe", 4, msg, strlen(msg), d);
    sha256_hex(d, hex);
    CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* RFC 4231 test case 6: a key longer than the block is hashed first. */
    unsigned char key[131];
    memset(key, 0xaa, sizeof key);
    const char *big = "Test Using Larger Than Block-Size Key - Hash Key First";
    sha256_hmac(key, sizeof key, big, strlen(big), d);
    sha256_hex(d, hex);
    CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(aws_example_canonical_request)
{
    struct sigv4_auth a;
    const char *why = NULL;
    CHECK_INT(sigv4_parse_auth(EXAMPLE_AUTH, strlen(EXAMPLE_AUTH), &a, &why), SIGV4_OK);
    struct sigv4_param q[] = {{sp("Version"), sp("2010-05-08")}, {sp("Action"), sp("ListUsers")}};
    struct sigv4_request r = {.method = "GET",
                              .path = sp("/"),
                              .query = q,
                              .nquery = 2,
                              .header = example_header,
                              .cls = (void *)example_headers,
                              .signed_headers = a.signed_headers,
                              .payload_hash = EMPTY_SHA256};
    char canon[SIGV4_CANON_MAX];
    long n = sigv4_canonical(&r, canon, sizeof canon);
    CHECK(n > 0);
    CHECK_STR(canon, "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
                     "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
                     "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                     "content-type;host;x-amz-date\n" EMPTY_SHA256);
    unsigned char d[SHA256_LEN];
    char hex[SHA256_HEX_LEN + 1];
    sha256(canon, (size_t)n, d);
    sha256_hex(d, hex);
    CHECK_STR(hex, "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
    char sig[SHA256_HEX_LEN + 1];
    CHECK_INT(sigv4_signature(EXAMPLE_SECRET, strlen(EXAMPLE_SECRET), &a, "20150830T123600Z", canon,
                              (size_t)n, sig),
              0);
    CHECK_STR(sig, a.signature);
    CHECK_STR(sig, "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
    /* Any other secret, date or canonical request signs otherwise. */
    CHECK_INT(sigv4_signature("x", 1, &a, "20150830T123600Z", canon, (size_t)n, sig), 0);
    CHECK(strcmp(sig, a.signature) != 0);
    canon[0] = 'P';
    CHECK_INT(sigv4_signature(EXAMPLE_SECRET, strlen(EXAMPLE_SECRET), &a, "20150830T123600Z", canon,
                              (size_t)n, sig),
              0);
    CHECK(strcmp(sig, a.signature) != 0);
}

TEST(parse_reads_every_part)
{
    struct sigv4_auth a;
    const char *why = NULL;
    CHECK_INT(sigv4_parse_auth(EXAMPLE_AUTH, strlen(EXAMPLE_AUTH), &a, &why), SIGV4_OK);
    CHECK(a.key.n == 11 && memcmp(a.key.p, "AKIDEXAMPLE", 11) == 0);
    CHECK(a.date.n == 8 && memcmp(a.date.p, "20150830", 8) == 0);
    CHECK(a.region.n == 9 && memcmp(a.region.p, "us-east-1", 9) == 0);
    CHECK(a.service.n == 3 && memcmp(a.service.p, "iam", 3) == 0);
    CHECK(a.scope.n == strlen("20150830/us-east-1/iam/aws4_request"));
    CHECK(memcmp(a.scope.p, "20150830/us-east-1/iam/aws4_request", a.scope.n) == 0);
    /* Without spaces after the commas, as botocore writes it, and in another order. */
    const char *tight = "AWS4-HMAC-SHA256 Signature=" EMPTY_SHA256 ",SignedHeaders=host,"
                        "Credential=k/20240101/eu-west-3/sqs/aws4_request";
    CHECK_INT(sigv4_parse_auth(tight, strlen(tight), &a, &why), SIGV4_OK);
    CHECK(a.signed_headers.n == 4);
    CHECK_STR(a.signature, EMPTY_SHA256);
}

TEST(parse_refuses_what_is_missing_or_malformed)
{
    struct sigv4_auth a;
    const char *why = NULL;
    CHECK_INT(sigv4_parse_auth(NULL, 0, &a, &why), SIGV4_MISSING);
    CHECK(why != NULL);
    const char *missing[] = {"Bearer abc", "AWS4-HMAC-SHA1 Credential=x", "AWS abc:def",
                             "AWS4-HMAC-SHA256X"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        CHECK_INT(sigv4_parse_auth(missing[i], strlen(missing[i]), &a, &why), SIGV4_MISSING);
    const char *incomplete[] = {
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host",
        "AWS4-HMAC-SHA256 Credential=k/2015083/us-east-1/sqs/aws4_request, SignedHeaders=host, "
        "Signature=" EMPTY_SHA256,
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/aws5_request, SignedHeaders=host, "
        "Signature=" EMPTY_SHA256,
        "AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, "
        "Signature=" EMPTY_SHA256,
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/x/aws4_request, "
        "SignedHeaders=host, Signature=" EMPTY_SHA256,
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/aws4_request, "
        "SignedHeaders=Host, Signature=" EMPTY_SHA256,
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/aws4_request, "
        "SignedHeaders=host;;x, Signature=" EMPTY_SHA256,
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/aws4_request, "
        "SignedHeaders=host, Signature=ABCD",
        "AWS4-HMAC-SHA256 Credential=k/20150830/us-east-1/sqs/aws4_request, "
        "SignedHeaders=host, Signature=" EMPTY_SHA256 ", Other=1",
    };
    for (size_t i = 0; i < sizeof incomplete / sizeof incomplete[0]; i++) {
        why = NULL;
        CHECK_INT(sigv4_parse_auth(incomplete[i], strlen(incomplete[i]), &a, &why),
                  SIGV4_INCOMPLETE);
        CHECK(why != NULL);
    }
    /* More signed headers than the bound; a header longer than SIGV4_AUTH_MAX. */
    char many[SIGV4_AUTH_MAX + 64];
    size_t n = (size_t)snprintf(many, sizeof many,
                                "AWS4-HMAC-SHA256 Signature=" EMPTY_SHA256 ", Credential=k/"
                                "20150830/r/sqs/aws4_request, SignedHeaders=h");
    for (int i = 0; i < SIGV4_SIGNED_MAX; i++)
        n += (size_t)snprintf(many + n, sizeof many - n, ";h%d", i);
    CHECK_INT(sigv4_parse_auth(many, n, &a, &why), SIGV4_INCOMPLETE);
    memset(many, 'a', sizeof many);
    memcpy(many, "AWS4-HMAC-SHA256 ", 17);
    CHECK_INT(sigv4_parse_auth(many, sizeof many, &a, &why), SIGV4_INCOMPLETE);
}

TEST(dates)
{
    CHECK_INT(sigv4_parse_date("20150830T123600Z", 16), 1440938160);
    CHECK_INT(sigv4_parse_date("19700101T000000Z", 16), 0);
    CHECK_INT(sigv4_parse_date("20240229T235959Z", 16), 1709251199);
    const char *bad[] = {"20230229T000000Z", "20151330T000000Z", "20150830 123600Z",
                         "20150830T123600",  "20150830T246000Z", "2015083OT123600Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(sigv4_parse_date(bad[i], strlen(bad[i])), -1);
    CHECK_INT(sigv4_parse_date(NULL, 0), -1);
}

TEST(canonical_encodes_sorts_and_trims)
{
    static const char *const h[][2] = {
        {"host", " \t a   b\t c  "}, {"x-amz-date", "d"}, {NULL, NULL}};
    struct sigv4_auth a;
    CHECK_INT(sigv4_parse_signed_headers("host;x-amz-date", 15, &a), 0);
    struct sigv4_param q[] = {
        {sp("b"), sp("x y")}, {sp("a"), sp("2")}, {sp("a"), sp("1")}, {sp("c~"), sp("/+=")}};
    struct sigv4_request r = {.method = "POST",
                              .path = sp("/000000000000/q 1"),
                              .query = q,
                              .nquery = 4,
                              .header = example_header,
                              .cls = (void *)h,
                              .signed_headers = a.signed_headers,
                              .payload_hash = EMPTY_SHA256};
    char canon[1024];
    CHECK(sigv4_canonical(&r, canon, sizeof canon) > 0);
    CHECK_STR(canon, "POST\n/000000000000/q%25201\na=1&a=2&b=x%20y&c~=%2F%2B%3D\n"
                     "host:a b c\nx-amz-date:d\n\n"
                     "host;x-amz-date\n" EMPTY_SHA256);
    /* A signed header the request lacks; an output too small. */
    CHECK_INT(sigv4_parse_signed_headers("host;x-missing", 14, &a), 0);
    r.signed_headers = a.signed_headers;
    CHECK_INT(sigv4_canonical(&r, canon, sizeof canon), -1);
    CHECK_INT(sigv4_parse_signed_headers("host", 4, &a), 0);
    r.signed_headers = a.signed_headers;
    CHECK_INT(sigv4_canonical(&r, canon, 40), -1);
    r.nquery = SIGV4_QUERY_MAX + 1;
    CHECK_INT(sigv4_canonical(&r, canon, sizeof canon), -1);
}

TEST_MAIN(TEST_ENTRY(sha256_vectors), TEST_ENTRY(aws_example_canonical_request),
          TEST_ENTRY(parse_reads_every_part),
          TEST_ENTRY(parse_refuses_what_is_missing_or_malformed), TEST_ENTRY(dates),
          TEST_ENTRY(canonical_encodes_sorts_and_trims))
