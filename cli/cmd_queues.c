/* Queue subcommands: stats, pause, resume, purge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static const struct opt no_opts[] = {{NULL, 0, NULL, NULL}};

/* The GET /queues row, shown by stats, pause and resume. */
static void show_queues(const cJSON *json)
{
    static const struct column cols[] = {
        {"QUEUE", "name", 0, 40},
        {"QUEUED", "queued", 0, 0},
        {"RUNNING", "running", 0, 0},
        {"SUCCEEDED", "succeeded", 0, 0},
        {"FAILED", "failed", 0, 0},
        {"CANCELLED", "cancelled", 0, 0},
        {"BLOCKED", "blocked", 0, 0},
        {"PAUSED", "paused", 0, 0},
        {"OLDEST_AGE_S", "oldest_queued_age_seconds", 0, 0},
    };
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(json, "queues");
    out_rows(rows ? rows : json, cols, sizeof(cols) / sizeof(cols[0]));
}

static int run_stats(struct cli *c, const struct args *a)
{
    if (a->npos != 0) {
        fprintf(stderr, "jobq stats: unexpected argument '%s' (see jobq stats --help)\n",
                a->pos[0]);
        return CLI_USAGE;
    }
    return cmd_send_show(c, "GET", "/queues", NULL, show_queues);
}

const struct command cmd_stats = {"stats", "", "show every queue's job counts", no_opts, run_stats};

/* METHOD /queues/{the queue argument}/{action}{query} and print the answer with show. */
static int queue_call(struct cli *c, const struct args *a, const char *who, const char *method,
                      const char *action, const char *query, void (*show)(const cJSON *json))
{
    const char *queue = cmd_one_arg(a, who, "queue name");
    if (queue == NULL) {
        return CLI_USAGE;
    }
    char *name = http_escape(queue);
    char *path = NULL;
    if (name == NULL || asprintf(&path, "/queues/%s/%s%s", name, action, query) < 0) {
        path = NULL;
    }
    free(name);
    if (path == NULL) {
        fprintf(stderr, "%s: out of memory\n", who);
        return CLI_UNREACHABLE;
    }
    int rc = cmd_send_show(c, method, path, NULL, show);
    free(path);
    return rc;
}

static int run_pause(struct cli *c, const struct args *a)
{
    return queue_call(c, a, "jobq pause", "POST", "pause", "", show_queues);
}

static int run_resume(struct cli *c, const struct args *a)
{
    return queue_call(c, a, "jobq resume", "POST", "resume", "", show_queues);
}

const struct command cmd_pause = {"pause", "QUEUE",
                                  "stop handing out the queue's jobs (enqueues still work)",
                                  no_opts, run_pause};
const struct command cmd_resume = {"resume", "QUEUE", "hand out the queue's jobs again", no_opts,
                                   run_resume};

static const struct opt purge_opts[] = {
    {"status", 's', "STATUS",
     "required: delete the jobs in this state (queued, blocked, succeeded, failed, cancelled)"},
    {NULL, 0, NULL, NULL},
};

static void show_purged(const cJSON *json)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(json, "deleted");
    printf("deleted %.0f jobs\n", cJSON_IsNumber(n) ? n->valuedouble : 0.0);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json, "more"))) {
        printf("more remain (the server stopped after its time limit): run it again\n");
    }
}

static int run_purge(struct cli *c, const struct args *a)
{
    const char *status = args_get(a, "status");
    if (status == NULL) {
        fprintf(stderr, "jobq purge: --status is required (see jobq purge --help)\n");
        return CLI_USAGE;
    }
    char *escaped = http_escape(status);
    char *query = NULL;
    if (escaped == NULL || asprintf(&query, "?status=%s", escaped) < 0) {
        query = NULL;
    }
    free(escaped);
    if (query == NULL) {
        fprintf(stderr, "jobq purge: out of memory\n");
        return CLI_UNREACHABLE;
    }
    int rc = queue_call(c, a, "jobq purge", "DELETE", "jobs", query, show_purged);
    free(query);
    return rc;
}

const struct command cmd_purge = {"purge", "QUEUE --status STATUS",
                                  "delete a queue's jobs in one state (never running ones)",
                                  purge_opts, run_purge};
