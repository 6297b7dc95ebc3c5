/* AWS Signature Version 4 (see sigv4.h). */
#include "sigv4.h"

#include <stdlib.h>
#include <string.h>

#include "civil.h"

#define SCHEME "AWS4-HMAC-SHA256"
#define TERMINATOR "aws4_request"
#define SECRET_MAX 256

static int span_is(struct sigv4_span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

int sigv4_parse_credential(const char *s, size_t n, struct sigv4_auth *a)
{
    struct sigv4_span part[5];
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '/')
            continue;
        if (k == 5)
            return -1;
        part[k++] = (struct sigv4_span){s + start, i - start};
        start = i + 1;
    }
    if (k != 5 || part[0].n == 0 || part[0].n > 128 || part[1].n != 8 || part[2].n == 0 ||
        part[2].n > 64 || part[3].n == 0 || part[3].n > 64 || !span_is(part[4], TERMINATOR))
        return -1;
    for (size_t i = 0; i < 8; i++) {
        if (!is_digit(part[1].p[i]))
            return -1;
    }
    a->key = part[0];
    a->date = part[1];
    a->region = part[2];
    a->service = part[3];
    a->scope = (struct sigv4_span){part[1].p, (size_t)(s + n - part[1].p)};
    return 0;
}

int sigv4_parse_signed_headers(const char *s, size_t n, struct sigv4_auth *a)
{
    size_t names = 1, len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ';') {
            if (len == 0)
                return -1;
            names++;
            len = 0;
        } else if ((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_' || c == '.') {
            len++;
        } else {
            return -1;
        }
    }
    if (n == 0 || len == 0 || names > SIGV4_SIGNED_MAX)
        return -1;
    a->signed_headers = (struct sigv4_span){s, n};
    return 0;
}

enum sigv4_parse sigv4_parse_auth(const char *value, size_t len, struct sigv4_auth *a,
                                  const char **why)
{
    memset(a, 0, sizeof *a);
    size_t sl = sizeof SCHEME - 1;
    if (!value || len < sl || memcmp(value, SCHEME, sl) != 0 || (len > sl && value[sl] != ' ')) {
        *why = "Request is missing Authentication Token";
        return SIGV4_MISSING;
    }
    if (len > SIGV4_AUTH_MAX) {
        *why = "the Authorization header is too long";
        return SIGV4_INCOMPLETE;
    }
    int have_cred = 0, have_signed = 0, have_sig = 0;
    size_t i = sl;
    while (i < len) {
        while (i < len && (value[i] == ' ' || value[i] == ','))
            i++;
        if (i == len)
            break;
        size_t end = i;
        while (end < len && value[end] != ',')
            end++;
        size_t e = end;
        while (e > i && value[e - 1] == ' ')
            e--;
        const char *part = value + i;
        size_t n = e - i;
        if (n > 11 && memcmp(part, "Credential=", 11) == 0) {
            if (have_cred++ || sigv4_parse_credential(part + 11, n - 11, a) != 0) {
                *why = "the Credential is malformed (KEY/YYYYMMDD/REGION/sqs/aws4_request)";
                return SIGV4_INCOMPLETE;
            }
        } else if (n > 14 && memcmp(part, "SignedHeaders=", 14) == 0) {
            if (have_signed++ || sigv4_parse_signed_headers(part + 14, n - 14, a) != 0) {
                *why = "the SignedHeaders are malformed";
                return SIGV4_INCOMPLETE;
            }
        } else if (n > 10 && memcmp(part, "Signature=", 10) == 0) {
            int ok = !have_sig++ && n - 10 == SHA256_HEX_LEN;
            for (size_t j = 10; ok && j < n; j++)
                ok = is_hex(part[j]);
            if (!ok) {
                *why = "the Signature is not 64 lowercase hex digits";
                return SIGV4_INCOMPLETE;
            }
            memcpy(a->signature, part + 10, SHA256_HEX_LEN);
            a->signature[SHA256_HEX_LEN] = '\0';
        } else {
            *why = "the Authorization header has a part that is not Credential=, "
                   "SignedHeaders= or Signature=";
            return SIGV4_INCOMPLETE;
        }
        i = end;
    }
    if (!have_cred || !have_signed || !have_sig) {
        *why = "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' "
               "parameters";
        return SIGV4_INCOMPLETE;
    }
    return SIGV4_OK;
}

/* Two digits of s at i, or -1. */
static int two(const char *s, size_t i)
{
    if (!is_digit(s[i]) || !is_digit(s[i + 1]))
        return -1;
    return (s[i] - '0') * 10 + (s[i + 1] - '0');
}

int64_t sigv4_parse_date(const char *s, size_t n)
{
    if (!s || n != SIGV4_DATE_LEN || s[8] != 'T' || s[15] != 'Z')
        return -1;
    int c = two(s, 0), y = two(s, 2), mo = two(s, 4), d = two(s, 6);
    int h = two(s, 9), mi = two(s, 11), se = two(s, 13);
    if (c < 0 || y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        se < 0 || se > 60)
        return -1;
    int64_t year = c * 100 + y;
    if (d > civil_month_days(year, mo))
        return -1;
    return civil_days(year, mo, d) * 86400 + h * 3600 + mi * 60 + se;
}

/* A bounded writer: what does not fit sets `over`. */
struct out {
    char *p;
    size_t cap, n;
    int over;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->over || n >= o->cap - o->n) {
        o->over = 1;
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static void putc_(struct out *o, char c)
{
    put(o, &c, 1);
}

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit((char)c) || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

/* s[0..n) URI-encoded as SigV4 wants it (unreserved kept, the rest %XX upper case; '/' kept
 * when keep_slash). */
static void put_encoded(struct out *o, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            putc_(o, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            put(o, e, 3);
        }
    }
}

/* One query parameter, encoded. */
struct enc_param {
    const char *name, *value;
    size_t nn, vn;
};

/* <0, 0, >0 as a[0..an) sorts before, with or after b[0..bn) (bytes, the shorter first). */
static int span_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* The canonical query string: every parameter encoded, sorted by name then value. */
static void put_query(struct out *o, const struct sigv4_param *q, size_t nq)
{
    struct enc_param e[SIGV4_QUERY_MAX];
    size_t total = 1;
    for (size_t i = 0; i < nq; i++)
        total += 3 * (q[i].name.n + q[i].value.n);
    if (nq == 0 || total > SIGV4_CANON_MAX * 3) {
        o->over |= nq != 0;
        return;
    }
    char *buf = malloc(total);
    if (!buf) {
        o->over = 1;
        return;
    }
    struct out s = {buf, total, 0, 0};
    for (size_t i = 0; i < nq; i++) {
        size_t at = s.n;
        put_encoded(&s, q[i].name.p, q[i].name.n, 0);
        size_t mid = s.n;
        put_encoded(&s, q[i].value.p, q[i].value.n, 0);
        e[i] = (struct enc_param){buf + at, buf + mid, mid - at, s.n - mid};
    }
    /* Insertion sort: at most SIGV4_QUERY_MAX entries. */
    for (size_t i = 1; i < nq; i++) {
        for (size_t j = i; j > 0; j--) {
            int c = span_cmp(e[j - 1].name, e[j - 1].nn, e[j].name, e[j].nn);
            if (c == 0)
                c = span_cmp(e[j - 1].value, e[j - 1].vn, e[j].value, e[j].vn);
            if (c <= 0)
                break;
            struct enc_param t = e[j];
            e[j] = e[j - 1];
            e[j - 1] = t;
        }
    }
    for (size_t i = 0; i < nq; i++) {
        if (i)
            putc_(o, '&');
        put(o, e[i].name, e[i].nn);
        putc_(o, '=');
        put(o, e[i].value, e[i].vn);
    }
    free(buf);
}

/* A header's value trimmed, with every run of spaces made one. */
static void put_header_value(struct out *o, struct sigv4_span v)
{
    size_t i = 0, n = v.n;
    while (i < n && (v.p[i] == ' ' || v.p[i] == '\t'))
        i++;
    while (n > i && (v.p[n - 1] == ' ' || v.p[n - 1] == '\t'))
        n--;
    int space = 0;
    for (; i < n; i++) {
        char c = v.p[i];
        if (c == ' ' || c == '\t') {
            space = 1;
            continue;
        }
        if (space)
            putc_(o, ' ');
        space = 0;
        putc_(o, c);
    }
}

long sigv4_canonical(const struct sigv4_request *r, char *out, size_t cap)
{
    if (!out || cap == 0 || r->nquery > SIGV4_QUERY_MAX)
        return -1;
    struct out o = {out, cap, 0, 0};
    put(&o, r->method, strlen(r->method));
    putc_(&o, '\n');
    if (r->path.n == 0) {
        putc_(&o, '/');
    } else {
        /* Encoded twice: once as the client sent it, once more for the canonical form. */
        char once[2048];
        struct out e = {once, sizeof once, 0, 0};
        put_encoded(&e, r->path.p, r->path.n, 1);
        if (e.over)
            return -1;
        put_encoded(&o, once, e.n, 1);
    }
    putc_(&o, '\n');
    put_query(&o, r->query, r->nquery);
    putc_(&o, '\n');
    const char *s = r->signed_headers.p;
    size_t left = r->signed_headers.n;
    while (left > 0) {
        size_t k = 0;
        while (k < left && s[k] != ';')
            k++;
        char name[128];
        if (k >= sizeof name)
            return -1;
        memcpy(name, s, k);
        name[k] = '\0';
        struct sigv4_span v;
        if (r->header(r->cls, name, &v) != 0 || v.n > SIGV4_HEADER_MAX)
            return -1;
        put(&o, name, k);
        putc_(&o, ':');
        put_header_value(&o, v);
        putc_(&o, '\n');
        s += k;
        left -= k;
        if (left) {
            s++;
            left--;
        }
    }
    putc_(&o, '\n');
    put(&o, r->signed_headers.p, r->signed_headers.n);
    putc_(&o, '\n');
    put(&o, r->payload_hash, strlen(r->payload_hash));
    if (o.over)
        return -1;
    out[o.n] = '\0';
    return (long)o.n;
}

int sigv4_signature(const char *secret, size_t slen, const struct sigv4_auth *a,
                    const char *amz_date, const char *canon, size_t n, char out[SHA256_HEX_LEN + 1])
{
    if (slen > SECRET_MAX || a->scope.n > SIGV4_STS_MAX - 128)
        return -1;
    unsigned char h[SHA256_LEN], key[SHA256_LEN];
    char hex[SHA256_HEX_LEN + 1], sts[SIGV4_STS_MAX];
    sha256(canon, n, h);
    sha256_hex(h, hex);
    struct out o = {sts, sizeof sts, 0, 0};
    put(&o, SCHEME "\n", sizeof SCHEME);
    put(&o, amz_date, SIGV4_DATE_LEN);
    putc_(&o, '\n');
    put(&o, a->scope.p, a->scope.n);
    putc_(&o, '\n');
    put(&o, hex, SHA256_HEX_LEN);
    if (o.over)
        return -1;
    char k0[4 + SECRET_MAX];
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, secret, slen);
    sha256_hmac(k0, 4 + slen, a->date.p, a->date.n, key);
    sha256_hmac(key, sizeof key, a->region.p, a->region.n, key);
    sha256_hmac(key, sizeof key, a->service.p, a->service.n, key);
    sha256_hmac(key, sizeof key, TERMINATOR, sizeof TERMINATOR - 1, key);
    sha256_hmac(key, sizeof key, sts, o.n, h);
    sha256_hex(h, out);
    explicit_bzero(k0, sizeof k0);
    explicit_bzero(key, sizeof key);
    return 0;
}
