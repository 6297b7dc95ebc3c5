/* Text helpers of the jobq client: numbers from the command line, UTF-8 that the server
 * accepts, and a bounded tail of a stream. Pure functions; no I/O. */
#ifndef JOBQ_CLI_TEXT_H
#define JOBQ_CLI_TEXT_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Parse s as a whole decimal integer (leading '-' allowed, nothing after it) into *out.
 * Returns 0, or -1 (and leaves *out alone) when s is empty, not a number or out of range. */
int text_to_ll(const char *s, long long *out);

/* Parse s[0..len) (NUL-terminated at len) as exactly one JSON value, whitespace around it
 * allowed. Returns the value (the caller deletes it), or NULL when it is not valid JSON,
 * holds a NUL byte, or memory ran out. */
cJSON *text_parse_json(const char *s, size_t len);

/* A copy of buf[0..len) as NUL-terminated, valid UTF-8: every byte that does not start a
 * well-formed sequence (overlong forms, surrogates and code points past U+10FFFF included),
 * and every NUL byte, becomes U+FFFD. Returns a malloc'ed string the caller frees, or NULL
 * when out of memory. */
char *text_utf8_clean(const char *buf, size_t len);

/* A growable byte buffer, NUL-terminated once something was added. Starts all zero. */
struct text_buf {
    char *data; /* NULL while empty */
    size_t len, cap;
};

/* Append data[0..n). Returns 0, or -1 when out of memory (the buffer is then unchanged).
 * Callers bound the length themselves. */
int text_buf_add(struct text_buf *b, const char *data, size_t n);

/* Release the buffer and empty it. Accepts NULL. */
void text_buf_clear(struct text_buf *b);

/* The last `cap` bytes written to a stream (the stderr of a command). */
struct text_tail {
    char *buf;    /* cap bytes, a ring */
    size_t cap;   /* fixed at init */
    size_t total; /* bytes ever written */
};

/* Prepare an empty tail keeping the last cap (> 0) bytes. Returns 0, or -1 when out of
 * memory. text_tail_clear() releases it (safe on a tail whose init failed). */
int text_tail_init(struct text_tail *t, size_t cap);

/* Append len bytes. This function can't fail. */
void text_tail_put(struct text_tail *t, const char *data, size_t len);

/* The kept bytes, oldest first, as text_utf8_clean() makes them; when bytes were dropped,
 * a multi-byte character cut at the start is skipped. The caller frees the result; NULL
 * when out of memory. */
char *text_tail_string(const struct text_tail *t);

void text_tail_clear(struct text_tail *t);

#endif
