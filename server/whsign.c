/* Standard Webhooks signatures (whsign.h). */
#include "whsign.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>
#include <openssl/params.h>

#include "log.h"

#define PREFIX "whsec_"

int whsign_key(const char *secret, unsigned char *key)
{
    if (strncmp(secret, PREFIX, strlen(PREFIX)) != 0)
        return -1;
    const char *b = secret + strlen(PREFIX);
    size_t n = strlen(b);
    /* Padded standard base64 of WHSIGN_KEY_MIN..WHSIGN_KEY_MAX bytes. */
    if (n % 4 != 0 || n < 32 || n > 88 ||
        strspn(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != n)
        return -1;
    size_t pad = b[n - 1] == '=' ? (b[n - 2] == '=' ? 2 : 1) : 0;
    if (strcspn(b, "=") != n - pad)
        return -1;
    unsigned char buf[96];
    int len = EVP_DecodeBlock(buf, (const unsigned char *)b, (int)n);
    if (len < 0)
        return -1;
    len -= (int)pad;
    if (len < WHSIGN_KEY_MIN || len > WHSIGN_KEY_MAX)
        return -1;
    memcpy(key, buf, (size_t)len);
    return len;
}

int whsign_secret_new(char *out)
{
    unsigned char key[WHSIGN_KEY_NEW];
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
        log_error("no randomness for a webhook secret");
        return -1;
    }
    memcpy(out, PREFIX, strlen(PREFIX));
    EVP_EncodeBlock((unsigned char *)out + strlen(PREFIX), key, (int)sizeof key);
    return 0;
}

int whsign_sign(const unsigned char *key, size_t key_len, const char *id, int64_t timestamp,
                const char *body, size_t body_len, char *out)
{
    char head[256];
    int hn = snprintf(head, sizeof head, "%s.%" PRId64 ".", id, timestamp);
    unsigned char mac[EVP_MAX_MD_SIZE];
    int ok = hn > 0 && (size_t)hn < sizeof head;
    EVP_MAC *m = ok ? EVP_MAC_fetch(NULL, "HMAC", NULL) : NULL;
    EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    size_t got = 0;
    ok = c && EVP_MAC_init(c, key, key_len, params) &&
         EVP_MAC_update(c, (const unsigned char *)head, (size_t)hn) &&
         EVP_MAC_update(c, (const unsigned char *)body, body_len) &&
         EVP_MAC_final(c, mac, &got, sizeof mac);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    if (!ok || got != 32) {
        log_error("webhook signature: hmac-sha256 failed");
        return -1;
    }
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)got);
    return 0;
}
