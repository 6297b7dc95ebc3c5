/* SQS messages as jobs, and their digests (see sqs_msg.h). */
#include "sqs_msg.h"
#include "mdbuf.h"
#include "sha256.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "limit.h"

/* MD5 (RFC 1321). */
struct md5 {
    uint32_t h[4];
    struct mdbuf b; /* bytes not yet compressed (mdbuf.h) */
};

static const uint32_t md5_k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
static const unsigned char md5_r[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                        5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

static void md5_block(void *state, const unsigned char chunk[64])
{
    struct md5 *m = state;
    const unsigned char *p = chunk;
    uint32_t w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[i * 4] | (uint32_t)p[i * 4 + 1] << 8 | (uint32_t)p[i * 4 + 2] << 16 |
               (uint32_t)p[i * 4 + 3] << 24;
    uint32_t a = m->h[0], b = m->h[1], c = m->h[2], d = m->h[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) % 16;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) % 16;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) % 16;
        }
        uint32_t t = d;
        d = c;
        c = b;
        uint32_t x = a + f + md5_k[i] + w[g];
        b = b + (x << md5_r[i] | x >> (32 - md5_r[i]));
        a = t;
    }
    m->h[0] += a;
    m->h[1] += b;
    m->h[2] += c;
    m->h[3] += d;
}

static void md5_init(struct md5 *m)
{
    *m = (struct md5){.h = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}};
}

static void md5_add(struct md5 *m, const void *data, size_t n)
{
    mdbuf_add(&m->b, data, n, md5_block, m);
}

static void md5_hex(struct md5 *m, char out[33])
{
    mdbuf_pad(&m->b, 0, md5_block, m);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned)(m->h[i / 4] >> (8 * (i % 4))) & 0xff);
}

void sqs_md5_hex(const void *data, size_t n, char out[33])
{
    struct md5 m;
    md5_init(&m);
    md5_add(&m, data, n);
    md5_hex(&m, out);
}

int sqs_body_ok(const char *body, size_t n)
{
    const unsigned char *p = (const unsigned char *)body;
    for (size_t i = 0; i < n;) {
        uint32_t c = p[i];
        size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        if (i + len > n)
            return 0;
        if (len == 2)
            c = (c & 0x1f) << 6 | (p[i + 1] & 0x3f);
        else if (len == 3)
            c = (c & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f);
        else if (len == 4)
            c = (c & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12 |
                (uint32_t)(p[i + 2] & 0x3f) << 6 | (p[i + 3] & 0x3f);
        int ok = c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
                 (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
        if (!ok)
            return 0;
        i += len;
    }
    return 1;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decode base64 s into out (room for strlen(s) * 3 / 4 bytes); returns the length, or -1
 * when s is not base64. */
static long b64_decode(const char *s, unsigned char *out)
{
    size_t n = strlen(s);
    if (n % 4 != 0)
        return -1;
    long len = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)s[i + j];
            if (c == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
            } else if (pad || (v[j] = b64_value(c)) < 0) {
                return -1;
            }
        }
        unsigned triple =
            (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        out[len++] = (unsigned char)(triple >> 16);
        if (pad < 2)
            out[len++] = (unsigned char)(triple >> 8);
        if (pad < 1)
            out[len++] = (unsigned char)triple;
    }
    return len;
}

/* 1 when name is a valid message attribute name: 1-256 of A-Z a-z 0-9 _ - ., not starting
 * with "AWS." or "Amazon." (any case), no "..", not starting or ending with '.'. */
static int attr_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > SQS_ATTR_NAME_MAX || name[0] == '.' || name[n - 1] == '.' ||
        strstr(name, "..") || strncasecmp(name, "aws.", 4) == 0 ||
        strncasecmp(name, "amazon.", 7) == 0)
        return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") == n;
}

/* The transport of a data type: 1 String or Number (with any ".label"), 2 Binary, 0 none. */
static int attr_transport(const char *type)
{
    static const struct {
        const char *name;
        size_t n;
        int transport;
    } kinds[] = {{"String", 6, 1}, {"Number", 6, 1}, {"Binary", 6, 2}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strncmp(type, kinds[i].name, kinds[i].n) == 0 &&
            (type[kinds[i].n] == '\0' || type[kinds[i].n] == '.'))
            return kinds[i].transport;
    return 0;
}

int sqs_msg_attrs_check(const cJSON *attrs, size_t *bytes, char *err, size_t errlen)
{
    if (!attrs)
        return 0;
    if (!cJSON_IsObject(attrs)) {
        snprintf(err, errlen, "MessageAttributes must be a map");
        return -1;
    }
    int n = 0;
    for (const cJSON *a = attrs->child; a; a = a->next) {
        if (++n > SQS_ATTRS_MAX) {
            snprintf(err, errlen, "a message has at most %d message attributes", SQS_ATTRS_MAX);
            return -1;
        }
        if (!attr_name_ok(a->string)) {
            snprintf(err, errlen, "message attribute name '%.64s' is not valid", a->string);
            return -1;
        }
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(a, "DataType");
        int t = cJSON_IsString(type) ? attr_transport(type->valuestring) : 0;
        if (!t || strlen(type->valuestring) > SQS_ATTR_NAME_MAX) {
            snprintf(err, errlen,
                     "message attribute '%.64s' must have a DataType of String, "
                     "Number or Binary",
                     a->string);
            return -1;
        }
        const char *field = t == 2 ? "BinaryValue" : "StringValue";
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, field);
        size_t vlen = cJSON_IsString(v) ? strlen(v->valuestring) : 0;
        if (vlen == 0) {
            snprintf(err, errlen, "message attribute '%.64s' must have a non-empty %s", a->string,
                     field);
            return -1;
        }
        if (t == 2) {
            unsigned char *tmp = malloc(vlen);
            long dl = tmp ? b64_decode(v->valuestring, tmp) : -1;
            free(tmp);
            if (dl < 0) {
                snprintf(err, errlen, "message attribute '%.64s': BinaryValue is not base64",
                         a->string);
                return -1;
            }
            vlen = (size_t)dl;
        } else if (!sqs_body_ok(v->valuestring, vlen)) {
            snprintf(err, errlen,
                     "message attribute '%.64s' holds characters outside the "
                     "allowed set",
                     a->string);
            return -1;
        }
        *bytes += strlen(a->string) + strlen(type->valuestring) + vlen;
    }
    return 0;
}

static void md5_add_len(struct md5 *m, const void *data, size_t n)
{
    unsigned char be[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                           (unsigned char)(n >> 8), (unsigned char)n};
    md5_add(m, be, 4);
    md5_add(m, data, n);
}

static int by_name(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

int sqs_msg_attrs_md5(const cJSON *attrs, char out[33])
{
    const cJSON *sorted[SQS_ATTRS_MAX];
    size_t n = 0;
    for (const cJSON *a = attrs ? attrs->child : NULL; a && n < SQS_ATTRS_MAX; a = a->next)
        sorted[n++] = a;
    if (n == 0)
        return -1;
    qsort(sorted, n, sizeof sorted[0], by_name);
    struct md5 m;
    md5_init(&m);
    for (size_t i = 0; i < n; i++) {
        const cJSON *a = sorted[i];
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "DataType"));
        if (!type)
            type = "String";
        md5_add_len(&m, a->string, strlen(a->string));
        md5_add_len(&m, type, strlen(type));
        unsigned char transport = (unsigned char)attr_transport(type);
        md5_add(&m, &transport, 1);
        const char *v = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(a, transport == 2 ? "BinaryValue" : "StringValue"));
        if (!v)
            v = "";
        if (transport == 2) {
            size_t vn = strlen(v);
            unsigned char *raw = malloc(vn ? vn : 1);
            long dl = raw ? b64_decode(v, raw) : -1;
            md5_add_len(&m, raw, dl > 0 ? (size_t)dl : 0);
            free(raw);
        } else {
            md5_add_len(&m, v, strlen(v));
        }
    }
    md5_hex(&m, out);
    return 0;
}

char *sqs_payload_new(const char *body, const cJSON *attrs, const char *group, const char *dedup)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *sqs = cJSON_AddObjectToObject(root, "sqs");
    char *text = NULL;
    if (sqs && cJSON_AddStringToObject(sqs, "body", body) &&
        (!group || cJSON_AddStringToObject(sqs, "group", group)) &&
        (!dedup || cJSON_AddStringToObject(sqs, "dedup", dedup))) {
        cJSON *copy = attrs && attrs->child ? cJSON_Duplicate(attrs, 1) : NULL;
        if (!attrs || !attrs->child || (copy && cJSON_AddItemToObject(sqs, "attributes", copy)))
            text = cJSON_PrintUnformatted(root);
        else
            cJSON_Delete(copy);
    }
    cJSON_Delete(root);
    return text;
}

int sqs_payload_read(const char *payload, char **body, cJSON **attrs)
{
    *body = NULL;
    *attrs = NULL;
    cJSON *root = cJSON_Parse(payload);
    const cJSON *sqs = cJSON_GetObjectItemCaseSensitive(root, "sqs");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(sqs, "body");
    if (cJSON_IsObject(root) && cJSON_GetArraySize(root) == 1 && cJSON_IsString(b)) {
        *body = strdup(b->valuestring);
        cJSON *a = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)sqs, "attributes");
        if (cJSON_IsObject(a))
            *attrs = a;
        else
            cJSON_Delete(a);
    } else {
        *body = strdup(payload);
    }
    cJSON_Delete(root);
    if (!*body) {
        cJSON_Delete(*attrs);
        *attrs = NULL;
        return -1;
    }
    return 0;
}

int sqs_payload_fifo(const char *payload, char *group, size_t glen, char *dedup, size_t dlen)
{
    cJSON *root = cJSON_Parse(payload);
    const cJSON *sqs = cJSON_GetObjectItemCaseSensitive(root, "sqs");
    const char *g = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sqs, "group"));
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sqs, "dedup"));
    snprintf(group, glen, "%s", g ? g : "");
    snprintf(dedup, dlen, "%s", d ? d : "");
    cJSON_Delete(root);
    return g ? 0 : -1;
}

void sqs_fifo_key(const char *queue, const char *group, char out[JOB_IDENT_MAX + 1])
{
    int n = snprintf(out, JOB_IDENT_MAX + 1, "%s%s/%s", LIMIT_ORDERED_PREFIX, queue, group);
    if (n > LIMIT_KEY_MAX) {
        char hex[65];
        sha256_hex_of(group, strlen(group), hex);
        snprintf(out, JOB_IDENT_MAX + 1, "%s%s/#%s", LIMIT_ORDERED_PREFIX, queue, hex);
    }
}

void sqs_sequence_number(int64_t id, char out[SQS_SEQUENCE_LEN + 1])
{
    snprintf(out, SQS_SEQUENCE_LEN + 1, "%020" PRId64, id);
}
