/* jobq webhooks: list the webhook subscriptions with their delivery state, put one (create or
 * replace) or delete one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "text.h"

#define WHO "jobq webhooks"

static const struct opt webhooks_opts[] = {
    {"endpoint", 'e', "URL", "put: the http(s) URL the events are POSTed to (required)"},
    {"types", 't', "LIST", "put: the event types sent, comma-separated (default: all)"},
    {"queues", 'q', "LIST", "put: only events of these queues, comma-separated (default: all)"},
    {"secret", 's', "SECRET", "put: whsec_ + base64 (default: generated and shown once)"},
    {"disabled", 0, NULL, "put: create or keep it disabled"},
    {"ordered", 0, NULL, "put: one order across all its events"},
    {NULL, 0, NULL, NULL},
};

/* A subscription (or {"webhooks": [...]}) as a table; a generated secret after it. */
static void show_webhooks(const cJSON *json)
{
    static const char *const heads[] = {
        "NAME",     "URL",         "ENABLED",       "DELIVERED",    "DELIVERIES",
        "FAILURES", "LAST_STATUS", "FAILING_SINCE", "NEXT_ATTEMPT", "DISABLED_REASON"};
    static const char *const fields[] = {
        "name",     "url",         "enabled",       "delivered_seq",   "deliveries",
        "failures", "last_status", "failing_since", "next_attempt_at", "disabled_reason"};
    enum { N = sizeof heads / sizeof heads[0] };
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(json, "webhooks");
    struct table t;
    table_init(&t, heads, N);
    const cJSON *w = rows ? rows->child : json;
    for (; w; w = rows ? w->next : NULL) {
        char *cells[N];
        for (size_t i = 0; i < N; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, fields[i]);
            cells[i] = i == 7 || i == 8 ? out_time(v) : out_cell(v, 0);
        }
        if (table_add(&t, cells) != 0)
            break;
    }
    table_print(&t, stdout);
    table_clear(&t);
    const cJSON *secret = cJSON_GetObjectItemCaseSensitive(json, "secret");
    if (cJSON_IsString(secret))
        printf("secret (shown once, keep it): %s\n", secret->valuestring);
}

/* Add the comma-separated list `v` (NULL: nothing) to body as the array `name`. */
static int add_list(cJSON *body, const char *name, const char *v)
{
    if (!v)
        return 1;
    cJSON *a = cJSON_AddArrayToObject(body, name);
    for (const char *p = v; a && *p;) {
        size_t n = strcspn(p, ",");
        char *item = strndup(p, n);
        cJSON *s = item ? cJSON_CreateString(item) : NULL;
        free(item);
        if (!s || !cJSON_AddItemToArray(a, s)) {
            cJSON_Delete(s);
            return 0;
        }
        p += n + (p[n] == ',');
    }
    return a != NULL;
}

/* The body of `jobq webhooks put`, or NULL after printing why (*rc says the exit code). */
static cJSON *put_body(const struct args *a, int *rc)
{
    const char *url = args_get(a, "endpoint"), *secret = args_get(a, "secret");
    *rc = CLI_USAGE;
    if (!url) {
        fprintf(stderr, WHO " put: give --endpoint http(s)://...\n");
        return NULL;
    }
    cJSON *body = cJSON_CreateObject();
    int ok = body && cJSON_AddStringToObject(body, "url", url) &&
             (!secret || cJSON_AddStringToObject(body, "secret", secret)) &&
             add_list(body, "types", args_get(a, "types")) &&
             add_list(body, "queues", args_get(a, "queues")) &&
             cJSON_AddBoolToObject(body, "enabled", !args_has(a, "disabled")) &&
             cJSON_AddBoolToObject(body, "ordered", args_has(a, "ordered"));
    if (!ok) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        *rc = CLI_UNREACHABLE;
        return NULL;
    }
    return body;
}

static int run_webhooks(struct cli *c, const struct args *a)
{
    const char *verb = a->npos > 0 ? a->pos[0] : NULL;
    if (!verb) {
        for (const struct opt *o = webhooks_opts; o->name; o++)
            if (args_has(a, o->name)) {
                fprintf(stderr, WHO ": --%s goes with 'put NAME'\n", o->name);
                return CLI_USAGE;
            }
        return cmd_send_show(c, "GET", "/webhooks", NULL, show_webhooks);
    }
    int put = strcmp(verb, "put") == 0;
    if ((!put && strcmp(verb, "delete") != 0) || a->npos != 2 || a->pos[1][0] == '\0') {
        fprintf(stderr,
                WHO ": expected nothing, 'put NAME --endpoint URL [options]' or 'delete NAME' "
                    "(see " WHO " --help)\n");
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    cJSON *body = put ? put_body(a, &rc) : NULL;
    if (put && !body)
        return rc;
    char *name = http_escape(a->pos[1]);
    char *path = NULL;
    if (name == NULL || asprintf(&path, "/webhooks/%s", name) < 0)
        path = NULL;
    free(name);
    if (path == NULL) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        return CLI_UNREACHABLE;
    }
    rc = cmd_send_show(c, put ? "PUT" : "DELETE", path, body, show_webhooks);
    free(path);
    cJSON_Delete(body);
    return rc;
}

const struct command cmd_webhooks = {
    "webhooks", "[put NAME --endpoint URL [options] | delete NAME]",
    "list the webhook subscriptions with their delivery state, or put (create or replace) or "
    "delete one",
    webhooks_opts, run_webhooks};
