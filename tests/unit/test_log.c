/* The log's JSON lines (--log-format json): every line is one JSON object whatever the
 * message holds (quotes, backslashes, control characters), request lines carry their fields,
 * and --access-log decides their level. stderr goes to a file while a case runs. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "testlib.h"

#define OUT "log.txt"

/* Send stderr to OUT (emptied). Returns the saved descriptor of the old stderr, or -1. */
static int capture(void)
{
    fflush(stderr);
    int saved = dup(2);
    if (saved < 0 || !freopen(OUT, "w", stderr))
        return -1;
    return saved;
}

/* Put stderr back and read what was written (the caller frees it). */
static char *release(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(OUT, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    if (buf && fread(buf, 1, 65535, f) == 0)
        buf[0] = '\0';
    fclose(f);
    return buf;
}

/* Line n (0-based) of text parsed as JSON, or NULL. */
static cJSON *line_json(const char *text, int n)
{
    const char *p = text;
    for (int i = 0; i < n && p; i++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (!p || !*p)
        return NULL;
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    return cJSON_ParseWithLength(p, len);
}

TEST(json_lines_escape_any_message)
{
    log_set_level(LOG_DEBUG);
    log_set_json(1);
    int saved = capture();
    CHECK(saved >= 0);
    log_info("quote \" backslash \\ newline \n tab \t bell \a end");
    log_warn("a warning");
    char *text = release(saved);
    log_set_json(0);
    log_set_level(LOG_INFO);
    CHECK(text != NULL);
    cJSON *a = line_json(text, 0), *b = line_json(text, 1);
    CHECK(a != NULL);
    CHECK(b != NULL);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "level")), "info");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "msg")),
              "quote \" backslash \\ newline \n tab \t bell \a end");
    CHECK(cJSON_GetObjectItem(a, "src") == NULL);
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(a, "ts")) != NULL);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(b, "level")), "warn");
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(b, "src")) != NULL);
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(text);
}

TEST(request_lines_carry_their_fields_and_follow_access_log)
{
    struct log_request r = {"POST", "/jobs/\"7\"", 201, 123, 4567, "rid-1", ""};
    log_set_level(LOG_INFO);
    log_set_json(1);
    int saved = capture();
    CHECK(saved >= 0);
    log_request(&r);
    log_set_access(0); /* at debug: not written at info */
    log_request(&r);
    log_set_access(1);
    r.ending = "client went away";
    log_request(&r);
    char *text = release(saved);
    log_set_json(0);
    CHECK(text != NULL);
    cJSON *a = line_json(text, 0), *b = line_json(text, 1);
    CHECK(line_json(text, 2) == NULL); /* two lines only */
    CHECK(a != NULL);
    CHECK(b != NULL);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "msg")), "request");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "method")), "POST");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "path")), "/jobs/\"7\"");
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(a, "status")), 201);
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(a, "bytes")), 123);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(a, "duration_ms")) > 4.5);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "request_id")), "rid-1");
    CHECK(cJSON_GetObjectItem(a, "ended") == NULL);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(b, "ended")), "client went away");
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(text);
}

TEST_MAIN(TEST_ENTRY(json_lines_escape_any_message),
          TEST_ENTRY(request_lines_carry_their_fields_and_follow_access_log))
