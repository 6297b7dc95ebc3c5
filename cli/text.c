/* Text helpers: whole-number parsing, UTF-8 clean-up, the ring that keeps a stream's tail. */
#include "text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int text_to_ll(const char *s, long long *out)
{
    if (s == NULL || *s == '\0') {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

cJSON *text_parse_json(const char *s, size_t len)
{
    if (strlen(s) != len) {
        return NULL;
    }
    /* cJSON wants the terminator inside the length to check that nothing follows. */
    return cJSON_ParseWithLengthOpts(s, len + 1, NULL, 1);
}

/* The length of the well-formed UTF-8 sequence at p (n bytes available), or 0 when the byte
 * at p does not start one (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c >= 0x01 && c <= 0x7F) {
        return 1;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF) {
            return 0;
        }
    }
    return len;
}

char *text_utf8_clean(const char *buf, size_t len)
{
    static const char replacement[] = "\xEF\xBF\xBD";
    /* Each bad byte grows to 3 bytes at most. */
    if (len > (((size_t)-1) - 1) / 3) {
        return NULL;
    }
    char *out = malloc(len * 3 + 1);
    if (out == NULL) {
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0, o = 0;
    while (i < len) {
        size_t n = utf8_seq(p + i, len - i);
        if (n == 0) {
            memcpy(out + o, replacement, 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return out;
}

int text_buf_add(struct text_buf *b, const char *data, size_t n)
{
    if (n >= ((size_t)-1) / 2 - b->len) {
        return -1;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        char *grown = realloc(b->data, cap);
        if (grown == NULL) {
            return -1;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

void text_buf_clear(struct text_buf *b)
{
    if (b == NULL) {
        return;
    }
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int text_tail_init(struct text_tail *t, size_t cap)
{
    t->buf = malloc(cap);
    t->cap = t->buf != NULL ? cap : 0;
    t->total = 0;
    return t->buf != NULL ? 0 : -1;
}

void text_tail_put(struct text_tail *t, const char *data, size_t len)
{
    if (t->cap == 0) {
        return;
    }
    if (len > t->cap) { /* only the last cap bytes can stay */
        t->total += len - t->cap;
        data += len - t->cap;
        len = t->cap;
    }
    for (size_t i = 0; i < len; i++) {
        t->buf[(t->total + i) % t->cap] = data[i];
    }
    t->total += len;
}

char *text_tail_string(const struct text_tail *t)
{
    size_t n = t->total < t->cap ? (size_t)t->total : t->cap;
    char *flat = malloc(n + 1);
    if (flat == NULL) {
        return NULL;
    }
    size_t start = t->total - n;
    for (size_t i = 0; i < n; i++) {
        flat[i] = t->buf[(start + i) % t->cap];
    }
    size_t skip = 0;
    if (start > 0) { /* the first character may have lost its leading bytes */
        while (skip < n && skip < 3 && ((unsigned char)flat[skip] & 0xC0) == 0x80) {
            skip++;
        }
    }
    char *out = text_utf8_clean(flat + skip, n - skip);
    free(flat);
    return out;
}

void text_tail_clear(struct text_tail *t)
{
    if (t == NULL) {
        return;
    }
    free(t->buf);
    t->buf = NULL;
    t->cap = 0;
    t->total = 0;
}
