/* One line per event on stderr: "2026-11-21T09:00:00Z LEVEL message". WARN and ERROR carry
 * file:line func. The level is checked before anything is formatted. Thread-safe. */
#ifndef JOBQ_LOG_H
#define JOBQ_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };

/* Set the lowest level written (default LOG_INFO). Call before threads start. */
void log_set_level(enum log_level level);

/* Parse "debug", "info", "warn", "error" or "off". Returns 0 and sets *out, or -1. */
int log_level_parse(const char *name, enum log_level *out);

/* 1 when level would be written. */
int log_enabled(enum log_level level);

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
