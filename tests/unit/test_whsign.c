/* Standard Webhooks signatures (server/whsign.h): the spec's own example signs as the
 * reference implementation (npm standardwebhooks) does; secrets are whsec_ + padded base64
 * of 24-64 bytes; a generated one reads back. */
#include <string.h>

#include "testlib.h"
#include "whsign.h"

TEST(signs_as_the_reference_implementation)
{
    unsigned char key[WHSIGN_KEY_MAX];
    int n = whsign_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", key);
    CHECK_INT(n, 24);
    char sig[WHSIGN_SIG_MAX + 1];
    const char *body = "{\"test\": 2432232314}";
    CHECK_INT(whsign_sign(key, (size_t)n, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                          strlen(body), sig),
              0);
    /* What standardwebhooks 1.1.1's Webhook.sign answers for the same input. */
    CHECK_STR(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(secrets_are_checked)
{
    unsigned char key[WHSIGN_KEY_MAX];
    const char *bad[] = {
        "",
        "whsec_",
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",   /* no prefix */
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La", /* not 4-aligned */
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La=aSw", /* = inside */
        "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==", /* 22 bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(whsign_key(bad[i], key), -1);
    char big[6 + 92 + 1]; /* 64 bytes: 86 characters and "==" */
    memcpy(big, "whsec_", 6);
    memset(big + 6, 'A', 86);
    memcpy(big + 92, "==", 3);
    CHECK_INT(whsign_key(big, key), 64);
    memset(big + 6, 'A', 92); /* 69 bytes */
    big[98] = 0;
    CHECK_INT(whsign_key(big, key), -1);
}

TEST(a_new_secret_reads_back)
{
    char a[WHSIGN_SECRET_MAX + 1], b[WHSIGN_SECRET_MAX + 1];
    unsigned char key[WHSIGN_KEY_MAX];
    CHECK_INT(whsign_secret_new(a), 0);
    CHECK_INT(whsign_secret_new(b), 0);
    CHECK(strncmp(a, "whsec_", 6) == 0);
    CHECK(strcmp(a, b) != 0);
    CHECK_INT(whsign_key(a, key), WHSIGN_KEY_NEW);
}

TEST_MAIN(TEST_ENTRY(signs_as_the_reference_implementation), TEST_ENTRY(secrets_are_checked),
          TEST_ENTRY(a_new_secret_reads_back))
