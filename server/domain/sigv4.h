/* AWS Signature Version 4 (the SQS front end's authentication, docs/sqs.md): reading the
 * Authorization header, the canonical request, the string to sign and the HMAC chain, as
 * AWS's "Create a signed AWS API request" describes them. Pure functions: no I/O, no clock;
 * the caller looks the access key up and compares the signatures (api/sqs_auth.c). Every
 * input is bounded by the limits below. */
#ifndef JOBQ_SIGV4_H
#define JOBQ_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define SIGV4_AUTH_MAX 4096    /* an Authorization header's bytes at most */
#define SIGV4_HEADER_MAX 4096  /* a signed header's value's bytes at most */
#define SIGV4_SIGNED_MAX 32    /* signed headers at most */
#define SIGV4_QUERY_MAX 64     /* query parameters at most */
#define SIGV4_CANON_MAX 65536  /* a canonical request's bytes at most */
#define SIGV4_SKEW_SECONDS 900 /* a request's date at most this far from the clock */
#define SIGV4_DATE_LEN 16      /* "YYYYMMDDTHHMMSSZ" */
#define SIGV4_STS_MAX 512      /* a string to sign's bytes at most */

/* A run of bytes inside a string the caller owns (not NUL-terminated). */
struct sigv4_span {
    const char *p;
    size_t n;
};

/* What an Authorization header holds; its spans borrow the header's value. */
struct sigv4_auth {
    struct sigv4_span key;            /* the access key id, 1 to 128 bytes */
    struct sigv4_span date;           /* the credential's YYYYMMDD */
    struct sigv4_span region;         /* any region, 1 to 64 bytes */
    struct sigv4_span service;        /* "sqs" for us, checked by the caller */
    struct sigv4_span scope;          /* date/region/service/aws4_request */
    struct sigv4_span signed_headers; /* "content-type;host;x-amz-date" */
    char signature[SHA256_HEX_LEN + 1];
};

enum sigv4_parse {
    SIGV4_OK = 0,
    SIGV4_MISSING,   /* no Authorization header, or another scheme than AWS4-HMAC-SHA256 */
    SIGV4_INCOMPLETE /* AWS4-HMAC-SHA256 with a part missing or malformed */
};

/* Read an Authorization header's value (value[0..len)): "AWS4-HMAC-SHA256" then
 * Credential=KEY/YYYYMMDD/REGION/SERVICE/aws4_request, SignedHeaders=a;b;c and
 * Signature=64 hex digits, in any order, separated by commas and optional spaces. Fills *a
 * (borrowing value) and returns SIGV4_OK, or SIGV4_MISSING / SIGV4_INCOMPLETE with *why a
 * static message. value NULL counts as missing. This function can't fail otherwise. */
enum sigv4_parse sigv4_parse_auth(const char *value, size_t len, struct sigv4_auth *a,
                                  const char **why);

/* Read Credential=... (KEY/YYYYMMDD/REGION/SERVICE/aws4_request) into a's key, date, region,
 * service and scope. Returns 0, or -1 when it is malformed. Used for the query string's
 * X-Amz-Credential too. */
int sigv4_parse_credential(const char *s, size_t n, struct sigv4_auth *a);

/* Read a signed-header list (1 to SIGV4_SIGNED_MAX lowercase names joined by ';') into a.
 * Returns 0, or -1 when it is malformed. */
int sigv4_parse_signed_headers(const char *s, size_t n, struct sigv4_auth *a);

/* The Unix time of an ISO 8601 basic date "YYYYMMDDTHHMMSSZ" (s[0..n)), or -1 when it is not
 * one (a wrong length, a field out of range). */
int64_t sigv4_parse_date(const char *s, size_t n);

/* One decoded query parameter (the caller leaves X-Amz-Signature out). */
struct sigv4_param {
    struct sigv4_span name, value;
};

/* The value of the request's header `name` (lowercase, NUL-terminated): 0 with *value set
 * (borrowed), or -1 when the request has none. */
typedef int (*sigv4_header_fn)(void *cls, const char *name, struct sigv4_span *value);

/* What a canonical request is made of. */
struct sigv4_request {
    const char *method;              /* "POST" */
    struct sigv4_span path;          /* the decoded URI path; empty: "/" */
    const struct sigv4_param *query; /* any order, at most SIGV4_QUERY_MAX */
    size_t nquery;
    sigv4_header_fn header;           /* the signed headers' values */
    void *cls;                        /* header's first argument */
    struct sigv4_span signed_headers; /* as the Authorization header lists them */
    const char *payload_hash;         /* the body's SHA-256, 64 hex digits */
};

/* Write the canonical request of r into out (cap bytes, NUL-terminated; at most
 * SIGV4_CANON_MAX is ever needed): method, URI path (each segment URI-encoded twice, as for
 * every service but S3), the query sorted by encoded name then value, each signed header as
 * "name:value" with its value trimmed and runs of spaces made one, the signed-header list,
 * the payload hash, joined by newlines. Returns its length, or -1 when it does not fit, a
 * signed header is absent or longer than SIGV4_HEADER_MAX, or there are too many query
 * parameters. */
long sigv4_canonical(const struct sigv4_request *r, char *out, size_t cap);

/* The signature of a canonical request (canon[0..n)) sent at amz_date (SIGV4_DATE_LEN bytes)
 * under a's scope with the secret secret[0..slen): the string to sign
 * "AWS4-HMAC-SHA256\nDATE\nSCOPE\nhex(SHA-256(canon))", signed with the key
 * HMAC(HMAC(HMAC(HMAC("AWS4" SECRET, date), region), service), "aws4_request"), as 64 lowercase
 * hex digits in out. Returns 0, or -1 when the secret is over 256 bytes or the scope too long.
 * The key material on the stack is wiped before it returns. */
int sigv4_signature(const char *secret, size_t slen, const struct sigv4_auth *a,
                    const char *amz_date, const char *canon, size_t n,
                    char out[SHA256_HEX_LEN + 1]);

#endif
