/* Standard Webhooks signatures (https://www.standardwebhooks.com; docs/events.md "Webhooks"):
 * whsec_ secrets and the v1 signature, HMAC-SHA256 over "id.timestamp.body" (libcrypto).
 * Thread-safe. */
#ifndef JOBQ_WHSIGN_H
#define JOBQ_WHSIGN_H

#include <stddef.h>
#include <stdint.h>

#define WHSIGN_KEY_MIN 24 /* bytes of a decoded secret */
#define WHSIGN_KEY_MAX 64
#define WHSIGN_KEY_NEW 32     /* bytes of a generated secret */
#define WHSIGN_SECRET_MAX 100 /* characters of a secret: "whsec_" + base64 of 64 bytes */
#define WHSIGN_SIG_MAX 64     /* characters of one "v1,<base64>" signature */

/* Decode secret "whsec_<standard base64, padded>" into key (WHSIGN_KEY_MAX bytes). Returns
 * the key's length (WHSIGN_KEY_MIN..WHSIGN_KEY_MAX), or -1 when secret is not such a
 * secret. This function can't fail otherwise. */
int whsign_key(const char *secret, unsigned char *key);

/* Write a new random secret of WHSIGN_KEY_NEW bytes into out (WHSIGN_SECRET_MAX + 1 bytes).
 * Returns 0, or -1 when the kernel gives no randomness (logged). */
int whsign_secret_new(char *out);

/* Write "v1,<base64 of HMAC-SHA256(key, id "." timestamp "." body)>" into out
 * (WHSIGN_SIG_MAX + 1 bytes). Borrows everything. Returns 0, or -1 when libcrypto fails
 * (logged). */
int whsign_sign(const unsigned char *key, size_t key_len, const char *id, int64_t timestamp,
                const char *body, size_t body_len, char *out);

#endif
