/* jobq schedules: list the schedules, set one (create or replace), delete, pause or resume
 * one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "text.h"

#define WHO "jobq schedules"

static const struct opt schedules_opts[] = {
    {"cron", 'c', "EXPR", "set: a cron expression (5 fields or @hourly, @daily, ...)"},
    {"every", 'e', "SECONDS", "set: a tick every SECONDS seconds (instead of --cron)"},
    {"job", 'j', "JSON", "set: the job each tick enqueues, as POST /jobs takes it (required)"},
    {"timezone", 'z', "ZONE", "set: the IANA time zone of --cron (default UTC)"},
    {"catch-up", 0, "POLICY", "set: none, latest (default) or all: ticks missed while down"},
    {"overlap", 0, "POLICY", "set: allow (default) or skip: skip while the last job runs"},
    {"paused", 0, NULL, "set: create it paused"},
    {NULL, 0, NULL, NULL},
};

/* A schedule's "cron" or "every Ns" cell. Malloc'ed (NULL: no memory). */
static char *when_cell(const cJSON *s)
{
    const cJSON *cron = cJSON_GetObjectItemCaseSensitive(s, "cron");
    const cJSON *every = cJSON_GetObjectItemCaseSensitive(s, "every_seconds");
    char *out = NULL;
    if (cJSON_IsString(cron))
        return out_cell(cron, 0);
    if (cJSON_IsNumber(every) && asprintf(&out, "every %.0fs", every->valuedouble) >= 0)
        return out;
    return strdup("-");
}

/* A schedule (or {"schedules": [...]}) as a table. */
static void show_schedules(const cJSON *json)
{
    static const char *const heads[] = {"NAME",     "WHEN",     "TIMEZONE", "NEXT_RUN",
                                        "LAST_RUN", "LAST_JOB", "PAUSED"};
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(json, "schedules");
    struct table t;
    table_init(&t, heads, 7);
    const cJSON *s = rows ? rows->child : json;
    for (; s; s = rows ? s->next : NULL) {
        char *cells[7] = {
            out_cell(cJSON_GetObjectItemCaseSensitive(s, "name"), 0),
            when_cell(s),
            out_cell(cJSON_GetObjectItemCaseSensitive(s, "timezone"), 0),
            out_time(cJSON_GetObjectItemCaseSensitive(s, "next_run_at")),
            out_time(cJSON_GetObjectItemCaseSensitive(s, "last_run_at")),
            out_cell(cJSON_GetObjectItemCaseSensitive(s, "last_job_id"), 0),
            out_cell(cJSON_GetObjectItemCaseSensitive(s, "paused"), 0),
        };
        if (table_add(&t, cells) != 0)
            break;
    }
    table_print(&t, stdout);
    table_clear(&t);
}

/* The body of `jobq schedules set`, or NULL after printing why (*rc says the exit code). */
static cJSON *set_body(const struct args *a, int *rc)
{
    long long every = 0;
    const char *cron = args_get(a, "cron"), *job = args_get(a, "job");
    *rc = CLI_USAGE;
    if (args_int(a, "every", -(1LL << 53), 1LL << 53, &every, WHO " set") != 0)
        return NULL;
    if (!cron == !args_has(a, "every")) {
        fprintf(stderr, WHO " set: give --cron or --every (one of them)\n");
        return NULL;
    }
    if (!job) {
        fprintf(stderr, WHO " set: give --job '{\"queue\": ..., \"payload\": ...}'\n");
        return NULL;
    }
    cJSON *jobj = text_parse_json(job, strlen(job));
    if (!jobj) {
        fprintf(stderr, WHO " set: --job is not valid JSON\n");
        return NULL;
    }
    cJSON *body = cJSON_CreateObject();
    int ok = body && cJSON_AddItemToObject(body, "job", jobj);
    if (!ok)
        cJSON_Delete(jobj);
    if (ok && cron)
        ok = cJSON_AddStringToObject(body, "cron", cron) != NULL;
    else if (ok)
        ok = cJSON_AddNumberToObject(body, "every_seconds", (double)every) != NULL;
    static const char *const texts[][2] = {
        {"timezone", "timezone"}, {"catch-up", "catch_up"}, {"overlap", "overlap"}};
    for (size_t i = 0; ok && i < sizeof texts / sizeof texts[0]; i++) {
        const char *v = args_get(a, texts[i][0]);
        if (v)
            ok = cJSON_AddStringToObject(body, texts[i][1], v) != NULL;
    }
    if (ok && args_has(a, "paused"))
        ok = cJSON_AddTrueToObject(body, "paused") != NULL;
    if (!ok) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        *rc = CLI_UNREACHABLE;
        return NULL;
    }
    return body;
}

/* pause or resume: the schedule as it is (GET), put back with paused set. */
static int set_paused(struct cli *c, const char *path, int paused)
{
    struct http_reply r;
    int rc = cli_request(c, "GET", path, NULL, &r);
    cJSON *body = rc == CLI_OK ? cJSON_Duplicate(r.json, 1) : NULL;
    http_reply_clear(&r);
    if (rc != CLI_OK)
        return rc;
    cJSON_DeleteItemFromObjectCaseSensitive(body, "paused");
    if (!body || !cJSON_AddBoolToObject(body, "paused", paused)) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        return CLI_UNREACHABLE;
    }
    rc = cmd_send_show(c, "PUT", path, body, show_schedules);
    cJSON_Delete(body);
    return rc;
}

static int run_schedules(struct cli *c, const struct args *a)
{
    static const char *const verbs[] = {"set", "delete", "pause", "resume"};
    const char *verb = a->npos > 0 ? a->pos[0] : NULL;
    if (!verb) {
        for (const struct opt *o = schedules_opts; o->name; o++)
            if (args_has(a, o->name)) {
                fprintf(stderr, WHO ": --%s goes with 'set NAME'\n", o->name);
                return CLI_USAGE;
            }
        return cmd_send_show(c, "GET", "/schedules", NULL, show_schedules);
    }
    int v = 0;
    while (v < 4 && strcmp(verb, verbs[v]) != 0)
        v++;
    if (v == 4 || a->npos != 2 || a->pos[1][0] == '\0') {
        fprintf(stderr, WHO ": expected nothing, 'set NAME options', 'delete NAME', 'pause NAME' "
                            "or 'resume NAME' (see " WHO " --help)\n");
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    cJSON *body = v == 0 ? set_body(a, &rc) : NULL;
    if (v == 0 && !body)
        return rc;
    char *name = http_escape(a->pos[1]);
    char *path = NULL;
    if (name == NULL || asprintf(&path, "/schedules/%s", name) < 0)
        path = NULL;
    free(name);
    if (path == NULL) {
        fprintf(stderr, WHO ": out of memory\n");
        cJSON_Delete(body);
        return CLI_UNREACHABLE;
    }
    if (v >= 2)
        rc = set_paused(c, path, v == 2);
    else
        rc = cmd_send_show(c, v == 0 ? "PUT" : "DELETE", path, body, show_schedules);
    free(path);
    cJSON_Delete(body);
    return rc;
}

const struct command cmd_schedules = {
    "schedules",
    "[set NAME (--cron EXPR | --every SECONDS) --job JSON [options] | delete NAME | pause NAME | "
    "resume NAME]",
    "list the schedules (recurring jobs), or set (create or replace), delete, pause or resume "
    "one",
    schedules_opts, run_schedules};
