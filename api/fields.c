/* Typed field readers for request bodies (see fields.h). */
#include "fields.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

int fields_fail(struct fields *f, enum err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    f->code = code;
    return -1;
}

void fields_init(struct fields *f, const cJSON *obj, struct jspan span, const char *prefix)
{
    memset(f, 0, sizeof *f);
    f->obj = obj;
    f->span = span;
    snprintf(f->prefix, sizeof f->prefix, "%s", prefix ? prefix : "");
    f->code = ERR_INVALID_REQUEST;
}

int fields_parse_body(struct fields *f, cJSON **root, const char *body, size_t len)
{
    static const char empty[] = "{}";
    struct jspan none = {empty, 0};
    fields_init(f, NULL, none, NULL);
    *root = NULL;
    if (!body || len == 0) {
        body = empty;
        len = sizeof empty - 1;
    }
    size_t where = 0;
    switch (json_validate(body, len, &where)) {
    case JV_OK:
        break;
    case JV_DEPTH:
        return fields_fail(f, ERR_INVALID_JSON, "the body nests more than %d levels deep",
                           JSONIN_MAX_DEPTH);
    case JV_UTF8:
        return fields_fail(f, ERR_INVALID_JSON,
                           "the body holds invalid UTF-8 or a lone surrogate at byte %zu", where);
    case JV_SYNTAX:
    default:
        return fields_fail(f, ERR_INVALID_JSON, "the body is not valid JSON (at byte %zu)", where);
    }
    /* The text is NUL-terminated at len, and cJSON wants the terminator inside the length. */
    cJSON *r = cJSON_ParseWithLengthOpts(body, len + 1, NULL, 1);
    if (!r)
        return fields_fail(f, ERR_INTERNAL, "out of memory parsing the body");
    if (!cJSON_IsObject(r)) {
        cJSON_Delete(r);
        return fields_fail(f, ERR_INVALID_REQUEST, "the request body must be a JSON object");
    }
    struct jspan span = {body, len};
    fields_init(f, r, span, NULL);
    *root = r;
    return 0;
}

/* The member, or NULL when absent or null. */
static const cJSON *member(const struct fields *f, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(f->obj, name);
    if (!item || cJSON_IsNull(item))
        return NULL;
    return item;
}

/* 1 when the member's text holds an escaped NUL. */
static int member_has_nul(const struct fields *f, const char *name)
{
    struct jspan v;
    return json_member(f->span, name, &v) && json_has_nul(v);
}

/* Refuse a member whose strings hold a NUL, naming the field and the character. Returns -1. */
static int bad_nul(struct fields *f, const char *name)
{
    return fields_fail(f, ERR_INVALID_REQUEST, "%s%s must not contain a NUL character (\\u0000)",
                       f->prefix, name);
}

int fields_int(struct fields *f, const char *name, int64_t min, int64_t max, int64_t *out)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    double d = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    /* Every bound we use is far below 2^53, so it converts to double exactly. */
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%s%s must be an integer between %" PRId64 " and %" PRId64, f->prefix,
                           name, min, max);
    *out = (int64_t)d;
    return 1;
}

int fields_object(struct fields *f, const char *name, struct fields *sub)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    struct jspan text;
    if (!cJSON_IsObject(item))
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s must be an object", f->prefix, name);
    if (!json_member(f->span, name, &text))
        return fields_fail(f, ERR_INTERNAL, "%s%s vanished from the body", f->prefix, name);
    size_t have = strlen(f->prefix), len = strlen(name);
    if (have + len + 2 > sizeof sub->prefix)
        return fields_fail(f, ERR_INTERNAL, "%s%s: field name too long", f->prefix, name);
    fields_init(sub, item, text, NULL);
    memcpy(sub->prefix, f->prefix, have);
    memcpy(sub->prefix + have, name, len);
    sub->prefix[have + len] = '.';
    sub->prefix[have + len + 1] = '\0';
    return 1;
}

int fields_bool(struct fields *f, const char *name, int *out)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    if (!cJSON_IsBool(item))
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s must be a boolean", f->prefix, name);
    *out = cJSON_IsTrue(item) ? 1 : 0;
    return 1;
}

int fields_string(struct fields *f, const char *name, size_t min, size_t max, const char **out)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    if (!cJSON_IsString(item) || !item->valuestring)
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s must be a string", f->prefix, name);
    if (member_has_nul(f, name))
        return bad_nul(f, name);
    size_t len = strlen(item->valuestring);
    if (len < min || len > max)
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s must be %zu to %zu bytes long", f->prefix,
                           name, min, max);
    *out = item->valuestring;
    return 1;
}

/* The code point of the UTF-8 sequence at u (avail bytes), or -1 when it is not one. */
static long utf8_at(const unsigned char *u, size_t avail)
{
    size_t len = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (len == 0 || len > avail)
        return -1;
    long cp = u[0] & (0x3F >> (len - 1));
    for (size_t k = 1; k < len; k++) {
        if ((u[k] & 0xC0) != 0x80)
            return -1;
        cp = cp << 6 | (u[k] & 0x3F);
    }
    return cp;
}

void fields_queue_why(const char *s, size_t n, char *out, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *u = (const unsigned char *)s + i;
        char one[2] = {s[i], '\0'};
        if (s[i] != '\0' && job_queue_name_ok(one))
            continue;
        long cp = u[0] < 0x80 ? u[0] : utf8_at(u, n - i);
        if (u[0] >= 0x20 && u[0] < 0x7f)
            snprintf(out, len, "it holds '%c' at byte %zu", s[i], i);
        else if (cp >= 0)
            snprintf(out, len, "it holds U+%04lX at byte %zu", (unsigned long)cp, i);
        else
            snprintf(out, len, "it holds the byte 0x%02X at byte %zu", u[0], i);
        return;
    }
    if (n == 0)
        snprintf(out, len, "it is empty");
    else
        snprintf(out, len, "it is %zu bytes long", n);
}

/* Refuse the queue name value (NULL when it is not a string) of field name[index] (index -1:
 * not in an array), saying why. Returns -1. */
static int bad_queue(struct fields *f, const char *name, long index, const char *value)
{
    char why[64] = "it is not a string", at[24] = "";
    if (value)
        fields_queue_why(value, strlen(value), why, sizeof why);
    if (index >= 0)
        snprintf(at, sizeof at, "[%ld]", index);
    return fields_fail(f, ERR_INVALID_REQUEST,
                       "%s%s%s must be 1 to %d characters of A-Z a-z 0-9 . _ : - (%s)", f->prefix,
                       name, at, JOB_QUEUE_MAX, why);
}

int fields_queue(struct fields *f, const char *name, const char **out)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    if (!cJSON_IsString(item) || !item->valuestring)
        return bad_queue(f, name, -1, NULL);
    if (member_has_nul(f, name))
        return bad_nul(f, name);
    if (!job_queue_name_ok(item->valuestring))
        return bad_queue(f, name, -1, item->valuestring);
    *out = item->valuestring;
    return 1;
}

int fields_queue_list(struct fields *f, const char *name, const char **out, size_t max, size_t *n)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    size_t count = cJSON_IsArray(item) ? (size_t)cJSON_GetArraySize(item) : 0;
    if (count < 1 || count > max)
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s must be an array of 1 to %zu queue names",
                           f->prefix, name, max);
    if (member_has_nul(f, name))
        return bad_nul(f, name);
    size_t k = 0;
    long i = 0;
    const cJSON *el;
    cJSON_ArrayForEach(el, item)
    {
        const char *v = cJSON_IsString(el) ? el->valuestring : NULL;
        if (!v || !job_queue_name_ok(v))
            return bad_queue(f, name, i, v);
        i++;
        size_t d = 0;
        while (d < k && strcmp(out[d], el->valuestring) != 0)
            d++;
        if (d == k)
            out[k++] = el->valuestring;
    }
    *n = k;
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int fields_tags(struct fields *f, const char *name, char **out)
{
    const cJSON *item = member(f, name);
    if (!item)
        return 0;
    size_t count = cJSON_IsArray(item) ? (size_t)cJSON_GetArraySize(item) : JOB_TAGS_MAX + 1;
    const char *tags[JOB_TAGS_MAX];
    size_t k = 0;
    if (count > JOB_TAGS_MAX)
        goto bad;
    if (member_has_nul(f, name))
        return bad_nul(f, name);
    const cJSON *el;
    cJSON_ArrayForEach(el, item)
    {
        if (!cJSON_IsString(el) || !el->valuestring)
            goto bad;
        size_t len = strlen(el->valuestring);
        if (len < 1 || len > JOB_TAG_MAX)
            goto bad;
        tags[k++] = el->valuestring;
    }
    if (k == 0)
        return 0;
    qsort(tags, k, sizeof tags[0], cmp_str);
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < k; i++) {
        if (i > 0 && strcmp(tags[i], tags[i - 1]) == 0)
            continue;
        cJSON *s = cJSON_CreateString(tags[i]);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    if (!text)
        return fields_fail(f, ERR_INTERNAL, "out of memory reading %s%s", f->prefix, name);
    *out = text;
    return 1;
bad:
    return fields_fail(f, ERR_INVALID_REQUEST,
                       "%s%s must be an array of at most %d strings of 1 to %d bytes", f->prefix,
                       name, JOB_TAGS_MAX, JOB_TAG_MAX);
}

int fields_json(struct fields *f, const char *name, int keep_null, char **out)
{
    struct jspan v;
    if (!json_member(f->span, name, &v))
        return 0;
    if (v.n == 4 && memcmp(v.p, "null", 4) == 0 && !keep_null)
        return 0;
    char *text = json_compact(v);
    if (!text)
        return fields_fail(f, ERR_INTERNAL, "out of memory reading %s%s", f->prefix, name);
    *out = text;
    return 1;
}

enum MHD_Result fields_reply(struct request *rq, const struct fields *f)
{
    return reply_error(rq, f->code, "%s", f->msg);
}
