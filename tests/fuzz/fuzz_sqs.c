/* libFuzzer target: the SQS front end's parsers and writers, no HTTP (api/sqs_query.h,
 * api/sqs_msg.h, api/sqs_attrs.h). The first byte of the input chooses what the rest is:
 *
 *     'q' + a query-protocol form  -> sqs_query_params(), then the XML of the result
 *     'm' + JSON message attributes -> sqs_msg_attrs_check(), sqs_msg_attrs_md5(), a payload
 *     'b' + a message body          -> sqs_body_ok(), a payload and back
 *     'a' + JSON queue attributes   -> sqs_attrs_check(), sqs_attrs_match(), sqs_queue_read()
 *     's' + an Authorization header, a newline, then header lines "name:value" (the same
 *           bytes serve as query parameters) -> sigv4_parse_auth(), sigv4_parse_date(),
 *           sigv4_canonical(), sigv4_signature() (server/domain/sigv4.h)
 *     'r' + a RedrivePolicy         -> sqs_redrive_parse(), sqs_redrive_allow_check(), and as
 *                                      a target's RedriveAllowPolicy sqs_redrive_target_ok()
 *
 * Invariants (abort() names a broken one): a form reads into an object or is refused; a
 * message's payload reads back as the same body, with its attributes' digest unchanged; what a
 * queue's stored attributes give is within the bounds the check allows; a parsed
 * Authorization header's parts lie inside it, and its canonical request is bounded and signs
 * to 64 hex digits; a RedrivePolicy read names a queue and a count within bounds, and the
 * target it names reads back. Built with
 * -fsanitize=fuzzer for fuzzing, or with replay.c to run a corpus (ctest). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"
#include "sqs_attrs.h"
#include "sqs_msg.h"
#include "sqs_query.h"
#include "sqs_redrive.h"

#define INVARIANT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_sqs: invariant broken at %s:%d: %s\n", __FILE__, __LINE__,       \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void form(const char *s, size_t n)
{
    cJSON *p = sqs_query_params(s, n);
    if (!p)
        return;
    INVARIANT(cJSON_IsObject(p));
    char *xml = sqs_query_answer("ReceiveMessage", p, "id");
    INVARIANT(xml && strncmp(xml, "<?xml", 5) == 0);
    free(xml);
    cJSON_Delete(p);
}

/* A body and attributes as a payload, read back. */
static void round_trip(const char *body, const cJSON *attrs)
{
    char *payload = sqs_payload_new(body, attrs, NULL, NULL);
    INVARIANT(payload);
    char group[SQS_FIFO_ID_MAX + 1], dedup[SQS_FIFO_ID_MAX + 1];
    INVARIANT(sqs_payload_fifo(payload, group, sizeof group, dedup, sizeof dedup) == -1);
    /* A FIFO message's payload keeps its group and dedup id beside the body. */
    char *fifo = sqs_payload_new(body, attrs, "g", "d");
    INVARIANT(fifo);
    INVARIANT(sqs_payload_fifo(fifo, group, sizeof group, dedup, sizeof dedup) == 0);
    INVARIANT(strcmp(group, "g") == 0 && strcmp(dedup, "d") == 0);
    char *fifo_body = NULL;
    cJSON *fifo_attrs = NULL;
    INVARIANT(sqs_payload_read(fifo, &fifo_body, &fifo_attrs) == 0);
    INVARIANT(strcmp(fifo_body, body) == 0);
    free(fifo_body);
    cJSON_Delete(fifo_attrs);
    free(fifo);
    char *back = NULL;
    cJSON *back_attrs = NULL;
    INVARIANT(sqs_payload_read(payload, &back, &back_attrs) == 0);
    INVARIANT(strcmp(back, body) == 0);
    char a[33], b[33];
    int ha = sqs_msg_attrs_md5(attrs, a), hb = sqs_msg_attrs_md5(back_attrs, b);
    INVARIANT(ha == hb && (ha != 0 || strcmp(a, b) == 0));
    free(back);
    cJSON_Delete(back_attrs);
    free(payload);
}

static void message_attrs(const char *s)
{
    cJSON *attrs = cJSON_Parse(s);
    size_t bytes = 0;
    char err[256];
    if (attrs && sqs_msg_attrs_check(attrs, &bytes, err, sizeof err) == 0)
        round_trip("body", attrs);
    cJSON_Delete(attrs);
}

static void body(const char *s, size_t n)
{
    if (strlen(s) == n && sqs_body_ok(s, n))
        round_trip(s, NULL);
}

static void queue_attrs(const char *s)
{
    cJSON *given = cJSON_Parse(s);
    char err[256];
    int bad_name = 0;
    if (given && sqs_attrs_check(given, &bad_name, err, sizeof err) == 0) {
        char *text = cJSON_PrintUnformatted(given);
        INVARIANT(text && sqs_attrs_match(given, text));
        struct sqs_queue q;
        sqs_queue_read(&q, "q", text, 0, 0);
        INVARIANT(q.visibility >= 0 && q.visibility <= 43200);
        INVARIANT(q.delay >= 0 && q.delay <= 900);
        INVARIANT(q.wait >= 0 && q.wait <= 20);
        INVARIANT(q.max_size >= 1024 && q.max_size <= 262144);
        for (size_t i = 0; i < sqs_attr_count(); i++) {
            char v[4096];
            sqs_attr_value(&q, i, v, sizeof v);
        }
        free(text);
    }
    cJSON_Delete(given);
}

/* The header "name:value" lines of cls (the text after the first newline). */
static int fuzz_header(void *cls, const char *name, struct sigv4_span *v)
{
    const char *p = cls;
    size_t n = strlen(name);
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > n && p[n] == ':' && strncmp(p, name, n) == 0) {
            *v = (struct sigv4_span){p + n + 1, len - n - 1};
            return 0;
        }
        p = nl ? nl + 1 : NULL;
    }
    return -1;
}

static int inside(struct sigv4_span s, const char *base, size_t n)
{
    return s.p >= base && s.p + s.n <= base + n;
}

static void signature(const char *s, size_t n)
{
    const char *nl = memchr(s, '\n', n);
    size_t alen = nl ? (size_t)(nl - s) : n;
    struct sigv4_auth a;
    const char *why = NULL;
    enum sigv4_parse r = sigv4_parse_auth(s, alen, &a, &why);
    INVARIANT(r == SIGV4_OK || why != NULL);
    (void)sigv4_parse_date(s, alen < SIGV4_DATE_LEN ? alen : SIGV4_DATE_LEN);
    if (r != SIGV4_OK)
        return;
    INVARIANT(inside(a.key, s, alen) && inside(a.scope, s, alen) &&
              inside(a.signed_headers, s, alen) && strlen(a.signature) == SHA256_HEX_LEN);
    const char *rest = nl ? nl + 1 : "";
    /* The header lines as query parameters too: name before ':', value after. */
    struct sigv4_param q[SIGV4_QUERY_MAX + 1];
    size_t nq = 0;
    for (const char *p = rest; *p && nq <= SIGV4_QUERY_MAX;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *c = memchr(p, ':', len);
        size_t k = c ? (size_t)(c - p) : len;
        q[nq++] = (struct sigv4_param){{p, k}, {c ? c + 1 : p + len, c ? len - k - 1 : 0}};
        p = e ? e + 1 : p + len;
    }
    struct sigv4_request req = {.method = "POST",
                                .path = {rest, strcspn(rest, "\n")},
                                .query = q,
                                .nquery = nq,
                                .header = fuzz_header,
                                .cls = (void *)rest,
                                .signed_headers = a.signed_headers,
                                .payload_hash = a.signature};
    char *canon = malloc(SIGV4_CANON_MAX);
    INVARIANT(canon);
    long len = sigv4_canonical(&req, canon, SIGV4_CANON_MAX);
    INVARIANT(len < SIGV4_CANON_MAX);
    if (len >= 0) {
        INVARIANT(strlen(canon) == (size_t)len);
        char sig[SHA256_HEX_LEN + 1];
        if (sigv4_signature(rest, strcspn(rest, "\n") % 200, &a, "20150830T123600Z", canon,
                            (size_t)len, sig) == 0)
            INVARIANT(strlen(sig) == SHA256_HEX_LEN);
    }
    free(canon);
}

static void redrive(const char *s)
{
    char err[256], target[JOB_QUEUE_MAX + 1];
    struct sqs_redrive r;
    if (sqs_redrive_parse(s, &r, err, sizeof err) == 0 && r.target[0]) {
        INVARIANT(r.max_receive >= 1 && r.max_receive <= SQS_MAX_RECEIVE_MAX);
        cJSON *stored = cJSON_CreateObject();
        INVARIANT(stored && cJSON_AddStringToObject(stored, "RedrivePolicy", s));
        char *text = cJSON_PrintUnformatted(stored);
        INVARIANT(text);
        sqs_redrive_target_of(text, target);
        INVARIANT(strcmp(target, r.target) == 0);
        free(text);
        cJSON_Delete(stored);
    }
    sqs_redrive_allow_check(s, err, sizeof err);
    cJSON *allow = cJSON_CreateObject();
    INVARIANT(allow && cJSON_AddStringToObject(allow, "RedriveAllowPolicy", s));
    char *text = cJSON_PrintUnformatted(allow);
    INVARIANT(text);
    sqs_redrive_target_ok("source", 0, "target", text, err, sizeof err);
    free(text);
    cJSON_Delete(allow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    switch (data[0]) {
    case 'q':
        form(s, size - 1);
        break;
    case 'm':
        message_attrs(s);
        break;
    case 'b':
        body(s, size - 1);
        break;
    case 'a':
        queue_attrs(s);
        break;
    case 's':
        signature(s, strlen(s));
        break;
    case 'r':
        redrive(s);
        break;
    default:
        break;
    }
    free(s);
    return 0;
}
