/* The SQS front end's SigV4 check (see sqs_auth.h). */
#include "sqs_auth.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "sigv4.h"
#include "sqs_wire.h"

/* The request's query arguments, decoded, for the canonical request. */
struct query {
    struct sigv4_param p[SIGV4_QUERY_MAX];
    size_t n;
    int over;
};

static enum MHD_Result query_add(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct query *q = cls;
    if (q->n == SIGV4_QUERY_MAX) {
        q->over = 1;
        return MHD_NO;
    }
    q->p[q->n++] = (struct sigv4_param){{key, key_size}, {value ? value : "", value_size}};
    return MHD_YES;
}

static int header_of(void *cls, const char *name, struct sigv4_span *v)
{
    struct request *rq = cls;
    const char *value = NULL;
    size_t len = 0;
    if (MHD_lookup_connection_value_n(rq->conn, MHD_HEADER_KIND, name, strlen(name), &value,
                                      &len) != MHD_YES ||
        !value)
        return -1;
    *v = (struct sigv4_span){value, len};
    return 0;
}

/* Check the signature of a (read from the Authorization header) against the request and the
 * key's secret. Returns 0 with rq->role set, or -1 after answering. */
static int verify(struct request *rq, const struct sigv4_auth *a, const char *amz_date)
{
    char secret[AUTH_SECRET_MAX + 1];
    size_t slen;
    enum auth_role role = auth_sqs_key(rq->app->auth, a->key.p, a->key.n, secret, &slen);
    if (role == AUTH_ROLE_NONE) {
        sqs_reply_error(rq, SQS_AUTH_UNKNOWN_KEY, NULL);
        return -1;
    }
    struct query q = {.n = 0};
    MHD_get_connection_values_n(rq->conn, MHD_GET_ARGUMENT_KIND, query_add, &q);
    unsigned char h[SHA256_LEN];
    char payload[SHA256_HEX_LEN + 1], mine[SHA256_HEX_LEN + 1];
    sha256(rq->body ? rq->body : "", rq->body_len, h);
    sha256_hex(h, payload);
    struct sigv4_request r = {.method = rq->method,
                              .path = {rq->url, strlen(rq->url)},
                              .query = q.p,
                              .nquery = q.n,
                              .header = header_of,
                              .cls = rq,
                              .signed_headers = a->signed_headers,
                              .payload_hash = payload};
    char *canon = malloc(SIGV4_CANON_MAX);
    long n = canon && !q.over ? sigv4_canonical(&r, canon, SIGV4_CANON_MAX) : -1;
    int ok = n >= 0 && sigv4_signature(secret, slen, a, amz_date, canon, (size_t)n, mine) == 0 &&
             auth_equal(mine, a->signature, SHA256_HEX_LEN);
    free(canon);
    explicit_bzero(secret, sizeof secret);
    if (!ok) {
        sqs_reply_error(rq, SQS_AUTH_SIGNATURE, NULL);
        return -1;
    }
    rq->role = role;
    return 0;
}

int sqs_auth_check_or_reply(struct request *rq)
{
    if (!rq->app->auth) {
        rq->role = AUTH_ROLE_ADMIN;
        return 0;
    }
    struct sigv4_span h = {NULL, 0};
    header_of(rq, "authorization", &h);
    struct sigv4_auth a;
    const char *why = NULL;
    enum sigv4_parse p = sigv4_parse_auth(h.p, h.n, &a, &why);
    if (p != SIGV4_OK) {
        sqs_reply_error(rq, p == SIGV4_MISSING ? SQS_AUTH_MISSING : SQS_AUTH_INCOMPLETE, "%s", why);
        return -1;
    }
    struct sigv4_span date = {NULL, 0};
    if (header_of(rq, "x-amz-date", &date) != 0) {
        sqs_reply_error(rq, SQS_AUTH_INCOMPLETE,
                        "Authorization header requires existence of a 'X-Amz-Date' header");
        return -1;
    }
    int64_t t = sigv4_parse_date(date.p, date.n);
    if (t < 0) {
        sqs_reply_error(rq, SQS_AUTH_INCOMPLETE,
                        "X-Amz-Date must be in the ISO 8601 basic format YYYYMMDDTHHMMSSZ");
        return -1;
    }
    if (memcmp(date.p, a.date.p, 8) != 0) {
        sqs_reply_error(rq, SQS_AUTH_SIGNATURE,
                        "Date in Credential scope does not match YYYYMMDD from X-Amz-Date");
        return -1;
    }
    if (a.service.n != 3 || memcmp(a.service.p, "sqs", 3) != 0) {
        sqs_reply_error(rq, SQS_AUTH_SIGNATURE,
                        "Credential should be scoped to correct service: 'sqs'.");
        return -1;
    }
    int64_t now = store_clock_now(rq->app->store, clock_now());
    if (t > now + SIGV4_SKEW_SECONDS || t < now - SIGV4_SKEW_SECONDS) {
        sqs_reply_error(rq, SQS_AUTH_EXPIRED,
                        "Request has expired: X-Amz-Date %.16s is more than %d minutes from "
                        "the server's time",
                        date.p, SIGV4_SKEW_SECONDS / 60);
        return -1;
    }
    char amz_date[SIGV4_DATE_LEN + 1];
    memcpy(amz_date, date.p, SIGV4_DATE_LEN);
    amz_date[SIGV4_DATE_LEN] = '\0';
    return verify(rq, &a, amz_date);
}

int sqs_auth_allows_or_reply(struct request *rq, enum auth_access access, const char *action)
{
    if (auth_allows((enum auth_role)rq->role, access))
        return 1;
    sqs_reply_error(rq, SQS_AUTH_DENIED, "the %s key may not %s",
                    auth_role_name((enum auth_role)rq->role), action);
    return 0;
}
