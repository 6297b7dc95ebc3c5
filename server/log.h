/* One line per event on stderr: "2026-11-21T09:00:00Z LEVEL message" (WARN and ERROR carry
 * file:line func), or with log_set_json(1) one JSON object per line: {"ts", "level", "msg"}
 * and "src" for WARN and ERROR. The level is checked before anything is formatted.
 * Thread-safe. */
#ifndef JOBQ_LOG_H
#define JOBQ_LOG_H

#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };

/* Set the lowest level written (default LOG_INFO). Call before threads start. */
void log_set_level(enum log_level level);

/* Parse "debug", "info", "warn", "error" or "off". Returns 0 and sets *out, or -1. */
int log_level_parse(const char *name, enum log_level *out);

/* 1 when level would be written. */
int log_enabled(enum log_level level);

/* Write JSON lines (1) or text (0, the default). Call before threads start. */
void log_set_json(int json);

/* Request lines at info level (1, the default) or debug (0). Call before threads start. */
void log_set_access(int on);

/* The level request lines are written at. */
enum log_level log_request_level(void);

/* One request (its access line). */
struct log_request {
    const char *method, *path; /* safe for a log line (log_safe) */
    int status;
    size_t bytes;       /* of the body answered */
    int64_t us;         /* from its first byte to its completion */
    const char *id;     /* X-Request-Id */
    const char *ending; /* "" when it completed, else how it ended ("client went away") */
};

/* Write r's line: "METHOD PATH STATUS BYTES B MS ms id=ID" (and "(ENDING)"), or a JSON object
 * with "method", "path", "status", "bytes", "duration_ms", "request_id" (and "ended"). */
void log_request(const struct log_request *r);

void log_write(enum log_level level, const char *file, int line, const char *func, const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));

#define log_debug(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_DEBUG))                                                                \
            log_write(LOG_DEBUG, __FILE__, __LINE__, __func__, __VA_ARGS__);                       \
    } while (0)
#define log_info(...)                                                                              \
    do {                                                                                           \
        if (log_enabled(LOG_INFO))                                                                 \
            log_write(LOG_INFO, __FILE__, __LINE__, __func__, __VA_ARGS__);                        \
    } while (0)
#define log_warn(...)                                                                              \
    do {                                                                                           \
        if (log_enabled(LOG_WARN))                                                                 \
            log_write(LOG_WARN, __FILE__, __LINE__, __func__, __VA_ARGS__);                        \
    } while (0)
#define log_error(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_ERROR))                                                                \
            log_write(LOG_ERROR, __FILE__, __LINE__, __func__, __VA_ARGS__);                       \
    } while (0)

#endif
