/* Strict JSON validation and span access to the raw body text (see jsonin.h). */
#include "jsonin.h"

#include <stdlib.h>
#include <string.h>

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    return i;
}

int json_hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Read the 4 hex digits at s[i..i+4) into *cp. Returns 0, or -1 when they are not there. */
static int read_hex4(const char *s, size_t n, size_t i, unsigned *cp)
{
    unsigned v = 0;
    if (i > n || n - i < 4)
        return -1;
    for (size_t k = 0; k < 4; k++) {
        int h = json_hex_value((unsigned char)s[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + (unsigned)h;
    }
    *cp = v;
    return 0;
}

/* Length of the well-formed UTF-8 sequence starting at s[i] (a byte >= 0x80), or 0 when it is
 * malformed: truncated, overlong, a UTF-16 surrogate, or above U+10FFFF. */
static size_t utf8_seq(const char *s, size_t n, size_t i)
{
    const unsigned char *u = (const unsigned char *)s + i;
    size_t avail = n - i;
    unsigned char lo = 0x80, hi = 0xBF;
    size_t len;

    if (u[0] >= 0xC2 && u[0] <= 0xDF) {
        len = 2;
    } else if (u[0] >= 0xE0 && u[0] <= 0xEF) {
        len = 3;
        if (u[0] == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (u[0] == 0xED)
            hi = 0x9F; /* surrogates U+D800..U+DFFF */
    } else if (u[0] >= 0xF0 && u[0] <= 0xF4) {
        len = 4;
        if (u[0] == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (u[0] == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* continuation byte, C0/C1 overlongs, F5..FF */
    }
    if (avail < len)
        return 0;
    if (u[1] < lo || u[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++) {
        if (u[k] < 0x80 || u[k] > 0xBF)
            return 0;
    }
    return len;
}

int json_utf8_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = (unsigned char)s[i] < 0x80 ? 1 : utf8_seq(s, n, i);
        if (len == 0)
            return 0;
        i += len;
    }
    return 1;
}

/* Scan the string starting at the quote s[*i]; on success *i is just past the closing quote. */
static enum jv scan_string(const char *s, size_t n, size_t *i)
{
    size_t k = *i + 1;
    for (;;) {
        if (k >= n)
            goto syntax;
        unsigned char c = (unsigned char)s[k];
        if (c == '"') {
            *i = k + 1;
            return JV_OK;
        }
        if (c < 0x20)
            goto syntax;
        if (c < 0x80 && c != '\\') {
            k++;
            continue;
        }
        if (c >= 0x80) {
            size_t len = utf8_seq(s, n, k);
            if (len == 0) {
                *i = k;
                return JV_UTF8;
            }
            k += len;
            continue;
        }
        /* An escape. */
        if (k + 1 >= n)
            goto syntax;
        c = (unsigned char)s[k + 1];
        if (c != '\0' && strchr("\"\\/bfnrt", c)) {
            k += 2;
            continue;
        }
        if (c != 'u')
            goto syntax;
        unsigned cp;
        if (read_hex4(s, n, k + 2, &cp) < 0)
            goto syntax;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            *i = k;
            return JV_UTF8; /* a low surrogate without its high half */
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (k + 7 >= n || s[k + 6] != '\\' || s[k + 7] != 'u' ||
                read_hex4(s, n, k + 8, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF) {
                *i = k;
                return JV_UTF8; /* a high surrogate not followed by a low one */
            }
            k += 12;
            continue;
        }
        k += 6;
    }
syntax:
    *i = k;
    return JV_SYNTAX;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Scan the number at s[*i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static enum jv scan_number(const char *s, size_t n, size_t *i)
{
    size_t k = *i;
    if (k < n && s[k] == '-')
        k++;
    if (k >= n || !is_digit(s[k]))
        goto syntax;
    if (s[k] == '0') {
        k++;
    } else {
        while (k < n && is_digit(s[k]))
            k++;
    }
    if (k < n && s[k] == '.') {
        k++;
        if (k >= n || !is_digit(s[k]))
            goto syntax;
        while (k < n && is_digit(s[k]))
            k++;
    }
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        if (k >= n || !is_digit(s[k]))
            goto syntax;
        while (k < n && is_digit(s[k]))
            k++;
    }
    *i = k;
    return JV_OK;
syntax:
    *i = k;
    return JV_SYNTAX;
}

static int scan_literal(const char *s, size_t n, size_t *i, const char *lit)
{
    size_t len = strlen(lit);
    if (n - *i < len || memcmp(s + *i, lit, len) != 0)
        return -1;
    *i += len;
    return 0;
}

/* An explicit stack of open containers ('{' or '[') bounds the depth: no recursion. */
enum jv json_validate(const char *s, size_t n, size_t *where)
{
    char stack[JSONIN_MAX_DEPTH];
    size_t depth = 0;
    size_t i = skip_ws(s, n, 0);
    enum jv r = JV_OK;

value:
    if (i >= n)
        goto syntax;
    switch (s[i]) {
    case '{':
    case '[':
        if (depth == JSONIN_MAX_DEPTH) {
            r = JV_DEPTH;
            goto fail;
        }
        stack[depth++] = s[i];
        i = skip_ws(s, n, i + 1);
        if (i < n && ((stack[depth - 1] == '{' && s[i] == '}') ||
                      (stack[depth - 1] == '[' && s[i] == ']'))) {
            depth--;
            i++;
            goto after;
        }
        if (stack[depth - 1] == '{')
            goto key;
        goto value;
    case '"':
        r = scan_string(s, n, &i);
        if (r != JV_OK)
            goto fail;
        goto after;
    case 't':
        if (scan_literal(s, n, &i, "true") < 0)
            goto syntax;
        goto after;
    case 'f':
        if (scan_literal(s, n, &i, "false") < 0)
            goto syntax;
        goto after;
    case 'n':
        if (scan_literal(s, n, &i, "null") < 0)
            goto syntax;
        goto after;
    default:
        if (s[i] != '-' && !is_digit(s[i]))
            goto syntax;
        r = scan_number(s, n, &i);
        if (r != JV_OK)
            goto fail;
        goto after;
    }

key:
    if (i >= n || s[i] != '"')
        goto syntax;
    r = scan_string(s, n, &i);
    if (r != JV_OK)
        goto fail;
    i = skip_ws(s, n, i);
    if (i >= n || s[i] != ':')
        goto syntax;
    i = skip_ws(s, n, i + 1);
    goto value;

after:
    i = skip_ws(s, n, i);
    if (depth == 0) {
        if (i != n)
            goto syntax;
        return JV_OK;
    }
    if (i >= n)
        goto syntax;
    if (s[i] == ',') {
        i = skip_ws(s, n, i + 1);
        if (stack[depth - 1] == '{')
            goto key;
        goto value;
    }
    if ((stack[depth - 1] == '{' && s[i] == '}') || (stack[depth - 1] == '[' && s[i] == ']')) {
        depth--;
        i++;
        goto after;
    }

syntax:
    r = JV_SYNTAX;
fail:
    if (where)
        *where = i;
    return r;
}

/* Past the end of the string whose opening quote is s[i] (validated text). */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return n;
}

/* Past the end of the value starting at s[i] (validated text). */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return n;
    if (s[i] == '"')
        return skip_string(s, n, i);
    if (s[i] == '{' || s[i] == '[') {
        size_t depth = 0;
        while (i < n) {
            char c = s[i];
            if (c == '"') {
                i = skip_string(s, n, i);
                continue;
            }
            if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return i + 1;
            }
            i++;
        }
        return n;
    }
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_ws((unsigned char)s[i]))
        i++;
    return i;
}

/* Encode cp as UTF-8 into out (4 bytes). Returns the length. */
static size_t utf8_put(unsigned cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode one character of the validated string body at s[*i] into out; advances *i. */
static size_t decode_char(const char *s, size_t n, size_t *i, unsigned char *out)
{
    if (s[*i] != '\\') {
        out[0] = (unsigned char)s[*i];
        (*i)++;
        return 1;
    }
    char e = *i + 1 < n ? s[*i + 1] : '\0';
    *i += 2;
    if (e != 'u') {
        static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
        const char *k = e ? strchr(from, e) : NULL;
        out[0] = (unsigned char)(k ? to[k - from] : e); /* " \\ / stand for themselves */
        return 1;
    }
    unsigned cp = 0, lo = 0;
    if (read_hex4(s, n, *i, &cp) < 0)
        return 0;
    *i += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && read_hex4(s, n, *i + 2, &lo) == 0) {
        *i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return utf8_put(cp, out);
}

/* 1 when the validated string s[start] (its opening quote) decodes to key. Like cJSON, which
 * keeps names as C strings, a decoded NUL ends the name. */
static int key_equals(const char *s, size_t n, size_t start, const char *key)
{
    size_t i = start + 1, k = 0;
    while (i < n && s[i] != '"') {
        unsigned char buf[4];
        size_t len = decode_char(s, n, &i, buf);
        for (size_t b = 0; b < len; b++) {
            if (buf[b] == '\0')
                return key[k] == '\0';
            if ((unsigned char)key[k] != buf[b])
                return 0;
            k++;
        }
    }
    return key[k] == '\0';
}

int json_member(struct jspan obj, const char *key, struct jspan *out)
{
    const char *s = obj.p;
    size_t n = obj.n;
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{')
        return 0;
    i = skip_ws(s, n, i + 1);
    while (i < n && s[i] == '"') {
        size_t kstart = i;
        i = skip_ws(s, n, skip_string(s, n, i));
        if (i >= n || s[i] != ':')
            return 0;
        i = skip_ws(s, n, i + 1);
        size_t vstart = i;
        i = skip_value(s, n, i);
        if (key_equals(s, n, kstart, key)) {
            out->p = s + vstart;
            out->n = i - vstart;
            return 1;
        }
        i = skip_ws(s, n, i);
        if (i >= n || s[i] != ',')
            return 0;
        i = skip_ws(s, n, i + 1);
    }
    return 0;
}

int json_array_next(struct jspan arr, size_t *pos, struct jspan *out)
{
    const char *s = arr.p;
    size_t n = arr.n;
    size_t i = *pos;
    if (i == 0) {
        i = skip_ws(s, n, 0);
        if (i >= n || s[i] != '[') {
            *pos = n;
            return 0;
        }
        i++;
    } else {
        i = skip_ws(s, n, i);
        if (i >= n || s[i] != ',') {
            *pos = n;
            return 0;
        }
        i++;
    }
    i = skip_ws(s, n, i);
    if (i >= n || s[i] == ']') {
        *pos = n;
        return 0;
    }
    size_t end = skip_value(s, n, i);
    out->p = s + i;
    out->n = end - i;
    *pos = end;
    return 1;
}

char *json_compact(struct jspan v)
{
    char *out = malloc(v.n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < v.n;) {
        char c = v.p[i];
        if (c == '"') {
            size_t end = skip_string(v.p, v.n, i);
            memcpy(out + o, v.p + i, end - i);
            o += end - i;
            i = end;
        } else {
            if (!is_ws((unsigned char)c))
                out[o++] = c;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

int json_has_nul(struct jspan v)
{
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] == '\0')
            return 1;
        if (v.p[i] != '\\')
            continue;
        if (i + 5 < v.n && v.p[i + 1] == 'u' && memcmp(v.p + i + 2, "0000", 4) == 0)
            return 1;
        i++; /* skip the escaped character, so "\\u0000" is not read as an escape */
    }
    return 0;
}
