/* The SQS query protocol (see sqs_query.h). */
#include "sqs_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobjson.h"
#include "jsonin.h"

#define INDEX_MAX 1000
#define DEPTH_MAX 6

/* Decode the form text s[0..n) ('+' is a space, %HH a byte) into a new string, or NULL. A
 * %00 or a bad escape is refused. */
static char *form_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '+') {
            out[k++] = ' ';
        } else if (s[i] == '%') {
            int hi = i + 2 < n ? json_hex_value((unsigned char)s[i + 1]) : -1;
            int lo = hi >= 0 ? json_hex_value((unsigned char)s[i + 2]) : -1;
            if (lo < 0 || (hi | lo) == 0) {
                free(out);
                return NULL;
            }
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    if (out)
        out[k] = '\0';
    return out;
}

/* Put value at the dotted path key into the tree root (objects all the way down). Returns 0,
 * or -1 when the path clashes with what is there, is too deep or empty. */
static int tree_put(cJSON *root, char *key, const char *value)
{
    cJSON *at = root;
    int depth = 0;
    for (char *part = key;; depth++) {
        char *dot = strchr(part, '.');
        if (dot)
            *dot = '\0';
        if (!*part || depth == DEPTH_MAX)
            return -1;
        cJSON *child = cJSON_GetObjectItemCaseSensitive(at, part);
        if (!dot) {
            if (child)
                return -1; /* given twice, or a prefix of another key */
            return cJSON_AddStringToObject(at, part, value) ? 0 : -1;
        }
        if (!child)
            child = cJSON_AddObjectToObject(at, part);
        if (!cJSON_IsObject(child))
            return -1;
        at = child;
        part = dot + 1;
    }
}

/* The index text s as 1..INDEX_MAX, or 0. */
static int index_of(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 4 || strspn(s, "0123456789") != n || s[0] == '0')
        return 0;
    int v = atoi(s);
    return v <= INDEX_MAX ? v : 0;
}

/* The members of obj (keyed by index) in index order, detached into a new array. NULL when
 * a key is not an index or out of memory. */
static cJSON *by_index(cJSON *obj)
{
    cJSON *arr = cJSON_CreateArray();
    while (arr && obj->child) {
        cJSON *least = NULL;
        for (cJSON *c = obj->child; c; c = c->next) {
            if (!index_of(c->string)) {
                cJSON_Delete(arr);
                return NULL;
            }
            if (!least || index_of(c->string) < index_of(least->string))
                least = c;
        }
        cJSON_AddItemToArray(arr, cJSON_DetachItemViaPointer(obj, least));
    }
    return arr;
}

static int shape(cJSON *obj);

/* The flattened member names of the query protocol and what the JSON protocol calls them. */
enum kind { LIST, MAP, ENTRIES };
static const struct {
    const char *query;
    const char *json;
    enum kind kind;
} members[] = {
    {"AttributeName", "AttributeNames", LIST},
    {"MessageAttributeName", "MessageAttributeNames", LIST},
    {"MessageSystemAttributeName", "MessageSystemAttributeNames", LIST},
    {"Attribute", "Attributes", MAP},
    {"MessageAttribute", "MessageAttributes", MAP},
    {"SendMessageBatchRequestEntry", "Entries", ENTRIES},
    {"DeleteMessageBatchRequestEntry", "Entries", ENTRIES},
    {"ChangeMessageVisibilityBatchRequestEntry", "Entries", ENTRIES},
};

/* Make the member of kind k (a tree keyed by index) its JSON shape. NULL when malformed. */
static cJSON *shaped(cJSON *tree, enum kind k)
{
    cJSON *arr = cJSON_IsObject(tree) ? by_index(tree) : NULL;
    if (!arr || k == LIST || k == ENTRIES) {
        for (cJSON *e = arr ? arr->child : NULL; e; e = e->next)
            if ((k == LIST && !cJSON_IsString(e)) || (k == ENTRIES && shape(e) != 0)) {
                cJSON_Delete(arr);
                return NULL;
            }
        return arr;
    }
    cJSON *map = cJSON_CreateObject();
    for (cJSON *e = arr->child; map && e; e = e->next) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "Name"));
        cJSON *value = cJSON_DetachItemFromObjectCaseSensitive(e, "Value");
        if (!name || !value || cJSON_GetObjectItemCaseSensitive(map, name)) {
            cJSON_Delete(value);
            cJSON_Delete(map);
            map = NULL;
        } else {
            cJSON_AddItemToObject(map, name, value);
        }
    }
    cJSON_Delete(arr);
    return map;
}

/* Turn the flattened members of obj into their JSON shapes, in place. Returns 0, or -1. */
static int shape(cJSON *obj)
{
    if (!cJSON_IsObject(obj))
        return -1;
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        cJSON *tree = cJSON_DetachItemFromObjectCaseSensitive(obj, members[i].query);
        if (!tree)
            continue;
        cJSON *v = shaped(tree, members[i].kind);
        cJSON_Delete(tree);
        if (!v || cJSON_GetObjectItemCaseSensitive(obj, members[i].json)) {
            cJSON_Delete(v);
            return -1;
        }
        cJSON_AddItemToObject(obj, members[i].json, v);
    }
    return 0;
}

cJSON *sqs_query_params(const char *body, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    for (size_t i = 0; root && i < n;) {
        size_t end = i;
        while (end < n && body[end] != '&')
            end++;
        const char *eq = memchr(body + i, '=', end - i);
        size_t klen = eq ? (size_t)(eq - (body + i)) : end - i;
        char *key = form_decode(body + i, klen);
        char *value = eq ? form_decode(eq + 1, (size_t)(body + end - eq - 1)) : strdup("");
        int bad = !key || !value || (klen > 0 && tree_put(root, key, value) != 0);
        free(key);
        free(value);
        if (bad) {
            cJSON_Delete(root);
            return NULL;
        }
        i = end + 1;
    }
    if (root && shape(root) != 0) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* The answer's text grows in a struct jtext (jobjson.h). */
static void put(struct jtext *x, const char *s, size_t n)
{
    jtext_put(x, s, n);
}

static void puts_(struct jtext *x, const char *s)
{
    put(x, s, strlen(s));
}

/* s escaped for XML text (& < > " and the carriage return, which XML would fold). */
static void put_text(struct jtext *x, const char *s)
{
    for (const char *p = s; *p; p++) {
        const char *e = *p == '&'    ? "&amp;"
                        : *p == '<'  ? "&lt;"
                        : *p == '>'  ? "&gt;"
                        : *p == '"'  ? "&quot;"
                        : *p == '\r' ? "&#xD;"
                                     : NULL;
        if (e)
            puts_(x, e);
        else
            put(x, p, 1);
    }
}

static void element(struct jtext *x, const char *name, const char *text)
{
    puts_(x, "<");
    puts_(x, name);
    puts_(x, ">");
    put_text(x, text);
    puts_(x, "</");
    puts_(x, name);
    puts_(x, ">");
}

static void open_tag(struct jtext *x, const char *name)
{
    puts_(x, "<");
    puts_(x, name);
    puts_(x, ">");
}

static void close_tag(struct jtext *x, const char *name)
{
    puts_(x, "</");
    puts_(x, name);
    puts_(x, ">");
}

static void value(struct jtext *x, const char *action, const cJSON *v);

/* The flattened element name of the JSON member `name` of action's answer, or NULL when it
 * is no list. */
static const char *member_of(const char *action, const char *name)
{
    if (strcmp(name, "QueueUrls") == 0 || strcmp(name, "queueUrls") == 0)
        return "QueueUrl";
    if (strcmp(name, "Messages") == 0)
        return "Message";
    if (strcmp(name, "Failed") == 0)
        return "BatchResultErrorEntry";
    if (strcmp(name, "Successful") == 0)
        return strcmp(action, "SendMessageBatch") == 0 ? "SendMessageBatchResultEntry"
               : strcmp(action, "DeleteMessageBatch") == 0
                   ? "DeleteMessageBatchResultEntry"
                   : "ChangeMessageVisibilityBatchResultEntry";
    return NULL;
}

/* The members of obj as elements. */
static void members_of(struct jtext *x, const char *action, const cJSON *obj)
{
    for (const cJSON *m = obj->child; m; m = m->next) {
        const char *item = member_of(action, m->string);
        int attrs = strcmp(m->string, "Attributes") == 0;
        int msg_attrs = strcmp(m->string, "MessageAttributes") == 0;
        if (item && cJSON_IsArray(m)) {
            for (const cJSON *e = m->child; e; e = e->next) {
                open_tag(x, item);
                value(x, action, e);
                close_tag(x, item);
            }
        } else if ((attrs || msg_attrs) && cJSON_IsObject(m)) {
            const char *tag = attrs ? "Attribute" : "MessageAttribute";
            for (const cJSON *a = m->child; a; a = a->next) {
                open_tag(x, tag);
                element(x, "Name", a->string);
                open_tag(x, "Value");
                value(x, action, a);
                close_tag(x, "Value");
                close_tag(x, tag);
            }
        } else {
            open_tag(x, m->string);
            value(x, action, m);
            close_tag(x, m->string);
        }
    }
}

static void value(struct jtext *x, const char *action, const cJSON *v)
{
    char num[32];
    if (cJSON_IsString(v)) {
        put_text(x, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        puts_(x, cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNumber(v)) {
        snprintf(num, sizeof num, "%.0f", v->valuedouble);
        puts_(x, num);
    } else if (cJSON_IsObject(v)) {
        members_of(x, action, v);
    }
}

#define XMLNS "http://queue.amazonaws.com/doc/2012-11-05/"

char *sqs_query_answer(const char *action, const cJSON *answer, const char *request_id)
{
    struct jtext x = {0};
    puts_(&x, "<?xml version=\"1.0\"?><");
    puts_(&x, action);
    puts_(&x, "Response xmlns=\"" XMLNS "\">");
    /* Always there (empty too): a client reads an empty receive's messages from it. */
    puts_(&x, "<");
    puts_(&x, action);
    puts_(&x, "Result>");
    if (answer)
        members_of(&x, action, answer);
    puts_(&x, "</");
    puts_(&x, action);
    puts_(&x, "Result>");
    puts_(&x, "<ResponseMetadata>");
    element(&x, "RequestId", request_id);
    puts_(&x, "</ResponseMetadata></");
    puts_(&x, action);
    puts_(&x, "Response>");
    if (x.oom) {
        free(x.p);
        return NULL;
    }
    return x.p;
}

char *sqs_query_error(const char *code, int sender, const char *message, const char *request_id)
{
    struct jtext x = {0};
    puts_(&x, "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"" XMLNS "\"><Error>");
    element(&x, "Type", sender ? "Sender" : "Receiver");
    element(&x, "Code", code);
    element(&x, "Message", message);
    puts_(&x, "<Detail/></Error>");
    element(&x, "RequestId", request_id);
    puts_(&x, "</ErrorResponse>");
    if (x.oom) {
        free(x.p);
        return NULL;
    }
    return x.p;
}
