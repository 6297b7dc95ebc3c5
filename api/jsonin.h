/* Reading request bodies. A body is first checked by json_validate() (strict RFC 8259
 * grammar, valid UTF-8, no lone surrogates, nesting at most JSONIN_MAX_DEPTH: every object
 * or array counts one level, the top level included), then parsed with cJSON for field
 * access. Any-JSON fields (payload, result, progress, error_detail) are taken verbatim from
 * the body text via spans, so numbers and strings are kept exactly as sent, then compacted. */
#ifndef JOBQ_JSONIN_H
#define JOBQ_JSONIN_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define JSONIN_MAX_DEPTH 64

/* A slice of the body text. */
struct jspan {
    const char *p;
    size_t n;
};

enum jv { JV_OK = 0, JV_SYNTAX, JV_UTF8, JV_DEPTH };

/* Validate text[0..n). On failure *where (may be NULL) gets the byte offset. Can't fail
 * otherwise; never reads past n. */
enum jv json_validate(const char *text, size_t n, size_t *where);

/* 1 when s[0..n) is well-formed UTF-8 (no overlong forms, surrogates or code points above
 * U+10FFFF), else 0. This function can't fail. */
int json_utf8_ok(const char *s, size_t n);

/* The value of the hex digit c (0-9, a-f, A-F), or -1. This function can't fail. */
int json_hex_value(unsigned char c);

/* Within a validated object span, the value span of the first member named key. Returns 1
 * when found, 0 when absent or obj is not an object. */
int json_member(struct jspan obj, const char *key, struct jspan *out);

/* Iterate the elements of a validated array span: start with *pos = 0; returns 1 and sets
 * *out while there is a next element. */
int json_array_next(struct jspan arr, size_t *pos, struct jspan *out);

/* A malloc'd NUL-terminated copy of the span without insignificant whitespace, or NULL when
 * out of memory. */
char *json_compact(struct jspan v);

/* 1 when a string inside the validated span v holds a NUL character (the escape \u0000),
 * which a C string would silently cut; 0 otherwise. This function can't fail. */
int json_has_nul(struct jspan v);

#endif
