/* jobq limits: list the limits, set one (create or replace), delete one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

#define WHO "jobq limits"

static const struct opt limits_opts[] = {
    {"max-running", 'm', "N", "set: at most N jobs of a key run at once"},
    {"rate", 'r', "JOBS/SECONDS", "set: at most JOBS claims of a key in any SECONDS seconds"},
    {NULL, 0, NULL, NULL},
};

/* One limit's rate as "JOBS/SECONDS", or "-" when it has none. Malloc'ed (NULL: no memory). */
static char *rate_cell(const cJSON *rate)
{
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(rate, "jobs");
    const cJSON *per = cJSON_GetObjectItemCaseSensitive(rate, "per_seconds");
    char *s = NULL;
    if (!cJSON_IsNumber(jobs) || !cJSON_IsNumber(per))
        return strdup("-");
    if (asprintf(&s, "%.0f/%.0fs", jobs->valuedouble, per->valuedouble) < 0)
        return NULL;
    return s;
}

/* A limit (or {"limits": [...]}) as a table. */
static void show_limits(const cJSON *json)
{
    static const char *const heads[] = {"KEY", "MAX_RUNNING", "RATE", "RUNNING", "PAUSED_UNTIL"};
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(json, "limits");
    struct table t;
    table_init(&t, heads, 5);
    const cJSON *l = rows ? rows->child : json;
    for (; l; l = rows ? l->next : NULL) {
        const cJSON *pu = cJSON_GetObjectItemCaseSensitive(l, "paused_until");
        char *cells[5] = {
            out_cell(cJSON_GetObjectItemCaseSensitive(l, "key"), 0),
            out_cell(cJSON_GetObjectItemCaseSensitive(l, "max_running"), 0),
            rate_cell(cJSON_GetObjectItemCaseSensitive(l, "rate")),
            out_cell(cJSON_GetObjectItemCaseSensitive(l, "running"), 0),
            cJSON_IsNumber(pu) ? out_time(pu) : out_cell(pu, 0),
        };
        if (table_add(&t, cells) != 0)
            break;
    }
    table_print(&t, stdout);
    table_clear(&t);
}

/* "JOBS/SECONDS" as two whole numbers (the server checks their bounds). Returns 0 or -1. */
static int parse_rate(const char *s, long long *jobs, long long *per)
{
    char *end = NULL;
    errno = 0;
    *jobs = strtoll(s, &end, 10);
    if (errno || end == s || *end != '/')
        return -1;
    const char *p = end + 1;
    *per = strtoll(p, &end, 10);
    return errno || end == p || *end != '\0' ? -1 : 0;
}

/* The body of `jobq limits set`, or NULL after printing why (*rc says the exit code). */
static cJSON *set_body(const struct args *a, int *rc)
{
    long long max = 0, jobs = 0, per = 0;
    const char *rate = args_get(a, "rate");
    *rc = CLI_USAGE;
    if (args_int(a, "max-running", -(1LL << 53), 1LL << 53, &max, WHO " set") != 0)
        return NULL;
    if (rate && parse_rate(rate, &jobs, &per) != 0) {
        fprintf(stderr, WHO " set: --rate is JOBS/SECONDS, two whole numbers (e.g. 10/60)\n");
        return NULL;
    }
    if (!args_has(a, "max-running") && !rate) {
        fprintf(stderr, WHO " set: give --max-running, --rate or both (see " WHO " --help)\n");
        return NULL;
    }
    cJSON *body = cJSON_CreateObject();
    cJSON *r = NULL;
    int ok = body != NULL;
    if (ok && args_has(a, "max-running"))
        ok = cJSON_AddNumberToObject(body, "max_running", (double)max) != NULL;
    if (ok && rate)
        ok = (r = cJSON_AddObjectToObject(body, "rate")) &&
             cJSON_AddNumberToObject(r, "jobs", (double)jobs) &&
             cJSON_AddNumberToObject(r, "per_seconds", (double)per);
    if (!ok) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        *rc = CLI_UNREACHABLE;
        return NULL;
    }
    return body;
}

static int run_limits(struct cli *c, const struct args *a)
{
    const char *verb = a->npos > 0 ? a->pos[0] : NULL;
    if (!verb) {
        if (args_has(a, "max-running") || args_has(a, "rate")) {
            fprintf(stderr, WHO ": --max-running and --rate go with 'set KEY'\n");
            return CLI_USAGE;
        }
        return cmd_send_show(c, "GET", "/limits", NULL, show_limits);
    }
    int set = strcmp(verb, "set") == 0, del = strcmp(verb, "delete") == 0;
    if ((!set && !del) || a->npos != 2 || a->pos[1][0] == '\0') {
        fprintf(stderr, WHO ": expected nothing, 'set KEY [options]' or 'delete KEY' (see " WHO
                            " --help)\n");
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    cJSON *body = set ? set_body(a, &rc) : NULL;
    if (set && !body)
        return rc;
    char *key = http_escape(a->pos[1]);
    char *path = NULL;
    if (key == NULL || asprintf(&path, "/limits/%s", key) < 0)
        path = NULL;
    free(key);
    if (path == NULL) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        return CLI_UNREACHABLE;
    }
    rc = cmd_send_show(c, set ? "PUT" : "DELETE", path, body, show_limits);
    free(path);
    cJSON_Delete(body);
    return rc;
}

const struct command cmd_limits = {
    "limits", "[set KEY [--max-running N] [--rate JOBS/SECONDS] | delete KEY]",
    "list the limits, or set (create or replace) or delete one; KEY may end in '*'", limits_opts,
    run_limits};
