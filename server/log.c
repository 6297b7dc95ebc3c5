#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level min_level = LOG_INFO;
static int json_lines;
static int access_on = 1;

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

void log_set_json(int json)
{
    json_lines = json;
}

void log_set_access(int on)
{
    access_on = on;
}

enum log_level log_request_level(void)
{
    return access_on ? LOG_INFO : LOG_DEBUG;
}

/* text as the inside of a JSON string into out (size n, truncated on a character boundary of
 * the escapes). */
static void json_escape(const char *text, char *out, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char esc[8];
        const char *put = esc;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            esc[2] = '\0';
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            esc[0] = (char)*p;
            esc[1] = '\0';
        }
        size_t len = strlen(put);
        if (o + len + 1 > n)
            break;
        memcpy(out + o, put, len);
        o += len;
    }
    out[o] = '\0';
}

static void stamp_now(char *stamp, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void log_request(const struct log_request *r)
{
    enum log_level level = log_request_level();
    if (!log_enabled(level))
        return;
    long long ms = (long long)(r->us / 1000), frac = (long long)(r->us % 1000);
    if (!json_lines) {
        log_write(level, __FILE__, __LINE__, __func__, "%s %s %d %zu B %lld.%03lld ms id=%s%s%s%s",
                  r->method, r->path, r->status, r->bytes, ms, frac, r->id,
                  r->ending[0] ? " (" : "", r->ending, r->ending[0] ? ")" : "");
        return;
    }
    char stamp[32], method[64], path[1024], id[512];
    stamp_now(stamp, sizeof stamp);
    json_escape(r->method, method, sizeof method);
    json_escape(r->path, path, sizeof path);
    json_escape(r->id, id, sizeof id);
    /* One fprintf per line: stdio locks the stream, so lines from threads never mix. */
    fprintf(stderr,
            "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"request\",\"method\":\"%s\","
            "\"path\":\"%s\",\"status\":%d,\"bytes\":%zu,\"duration_ms\":%lld.%03lld,"
            "\"request_id\":\"%s\"%s%s%s}\n",
            stamp, level_names[level], method, path, r->status, r->bytes, ms, frac, id,
            r->ending[0] ? ",\"ended\":\"" : "", r->ending, r->ending[0] ? "\"" : "");
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
    stamp_now(stamp, sizeof stamp);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    /* One fprintf per line: stdio locks the stream, so lines from threads never mix. */
    if (json_lines) {
        char text[sizeof msg * 6 + 1];
        json_escape(msg, text, sizeof text);
        if (level >= LOG_WARN)
            fprintf(stderr,
                    "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\",\"src\":\"%s:%d %s\"}\n", stamp,
                    level_names[level], text, base, line, func);
        else
            fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\"}\n", stamp,
                    level_names[level], text);
    } else if (level >= LOG_WARN) {
        fprintf(stderr, "%s %s %s (%s:%d %s)\n", stamp, level_names[level], msg, base, line, func);
    } else {
        fprintf(stderr, "%s %s %s\n", stamp, level_names[level], msg);
    }
}
