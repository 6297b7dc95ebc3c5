#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level min_level = LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void log_set_level(enum log_level level)
{
    min_level = level;
}

int log_level_parse(const char *name, enum log_level *out)
{
    for (int i = 0; i <= LOG_OFF; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

int log_enabled(enum log_level level)
{
    return level >= min_level && level < LOG_OFF;
}

void log_write(enum log_level level, const char *file, int line, const char *func, const char *fmt,
               ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);

    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    /* One fprintf per line: stdio locks the stream, so lines from threads never mix. */
    if (level >= LOG_WARN)
        fprintf(stderr, "%s %s %s (%s:%d %s)\n", stamp, level_names[level], msg, base, line, func);
    else
        fprintf(stderr, "%s %s %s\n", stamp, level_names[level], msg);
}
