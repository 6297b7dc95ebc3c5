/* Job subcommands: enqueue, get, list, attempts, deps, retry, cancel. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "text.h"

#define MAX_REQUIRES 32 /* the server's limit on tags; more are sent for it to refuse */
#define MAX_AFTER 1000  /* the server's limit on depends_on; more are sent for it to refuse */

long long cmd_job_id(const struct args *a, const char *who)
{
    long long id = 0;
    if (a->npos != 1 || text_to_ll(a->pos[0], &id) != 0 || id <= 0) {
        fprintf(stderr, "%s: give one job id, a positive whole number (see %s --help)\n", who, who);
        return 0;
    }
    return id;
}

const char *cmd_one_arg(const struct args *a, const char *who, const char *what)
{
    if (a->npos != 1 || a->pos[0][0] == '\0') {
        fprintf(stderr, "%s: give one %s (see %s --help)\n", who, what, who);
        return NULL;
    }
    return a->pos[0];
}

int cmd_send_show(struct cli *c, const char *method, const char *path, const cJSON *body,
                  void (*show)(const cJSON *json))
{
    struct http_reply r;
    int rc = cli_request(c, method, path, body, &r);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(&r);
        } else {
            (show ? show : out_object)(r.json);
        }
    }
    http_reply_clear(&r);
    return rc;
}

/* ----- enqueue ---------------------------------------------------------------------- */

static const struct opt enqueue_opts[] = {
    {"queue", 'q', "NAME", "the queue (default: default)"},
    {"priority", 'p', "N", "higher runs first (default 0)"},
    {"delay", 0, "S", "run no sooner than S seconds from now"},
    {"run-at", 0, "EPOCH", "run no sooner than this time (Unix seconds)"},
    {"max-attempts", 0, "N", "claims before the job fails for good (default 5)"},
    {"max-runtime", 0, "S", "a claim may run at most S seconds"},
    {"idempotency-key", 0, "KEY", "the same key in the same queue gives back the same job"},
    {"requires", 0, "TAG", "a capability the worker must have (repeat for more)"},
    {"after", 0, "ID", "run only after job ID has succeeded (repeat for more; sets depends_on)"},
    {"on-dependency-failure", 0, "MODE",
     "when a job it runs after fails or is cancelled: cancel (default) or run"},
    {NULL, 0, NULL, NULL},
};

/* Read all of stdin, at most HTTP_MAX_ANSWER bytes. Returns 0 and fills *b (the caller
 * clears it), or -1 after printing why. */
static int read_stdin(struct text_buf *b)
{
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
        if (got > HTTP_MAX_ANSWER - b->len || text_buf_add(b, chunk, got) != 0) {
            fprintf(stderr, "jobq enqueue: the payload on stdin is too large\n");
            return -1;
        }
    }
    if (ferror(stdin)) {
        perror("jobq enqueue: reading stdin");
        return -1;
    }
    return text_buf_add(b, "", 0); /* NUL-terminated even when empty */
}

/* --after ID (repeated) as depends_on and --on-dependency-failure into body. Returns 0, or -1
 * after printing why. */
static int enqueue_after(const struct args *a, cJSON *body, const char *who)
{
    const char *ids[MAX_AFTER + 1];
    int n = args_all(a, "after", ids, MAX_AFTER + 1);
    if (n > 0) {
        cJSON *deps = cJSON_AddArrayToObject(body, "depends_on");
        for (int i = 0; i < n && i <= MAX_AFTER; i++) {
            long long id;
            if (text_to_ll(ids[i], &id) != 0 || id <= 0) {
                fprintf(stderr, "%s: --after takes a job id, a positive whole number, not '%s'\n",
                        who, ids[i]);
                return -1;
            }
            cJSON_AddItemToArray(deps, cJSON_CreateNumber((double)id));
        }
    }
    const char *mode = args_get(a, "on-dependency-failure");
    if (mode != NULL) {
        cJSON_AddStringToObject(body, "on_dependency_failure", mode);
    }
    return 0;
}

/* The enqueue body from the payload and the options, or NULL after printing why. */
static cJSON *enqueue_body(const struct args *a, const char *who)
{
    static const struct {
        const char *opt, *field;
    } numbers[] = {
        {"priority", "priority"},
        {"delay", "delay_seconds"},
        {"run-at", "run_at"},
        {"max-attempts", "max_attempts"},
        {"max-runtime", "max_runtime_seconds"},
    };
    if (a->npos > 1) {
        fprintf(stderr, "%s: give at most one payload (see %s --help)\n", who, who);
        return NULL;
    }
    struct text_buf in = {0};
    if ((a->npos == 0 || strcmp(a->pos[0], "-") == 0) && read_stdin(&in) != 0) {
        text_buf_clear(&in);
        return NULL;
    }
    const char *src = in.data ? in.data : a->pos[0];
    cJSON *payload = text_parse_json(src, in.data ? in.len : strlen(src));
    text_buf_clear(&in);
    if (payload == NULL) {
        fprintf(stderr, "%s: the payload is not valid JSON\n", who);
        return NULL;
    }
    cJSON *body = cJSON_CreateObject();
    cJSON_AddItemToObject(body, "payload", payload);
    const char *queue = args_get(a, "queue");
    if (queue != NULL) {
        cJSON_AddStringToObject(body, "queue", queue);
    }
    const char *key = args_get(a, "idempotency-key");
    if (key != NULL) {
        cJSON_AddStringToObject(body, "idempotency_key", key);
    }
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        long long v;
        if (!args_has(a, numbers[i].opt)) {
            continue;
        }
        if (args_int(a, numbers[i].opt, LLONG_MIN, LLONG_MAX, &v, who) != 0) {
            cJSON_Delete(body);
            return NULL;
        }
        cJSON_AddNumberToObject(body, numbers[i].field, (double)v);
    }
    if (enqueue_after(a, body, who) != 0) {
        cJSON_Delete(body);
        return NULL;
    }
    const char *tags[MAX_REQUIRES + 1];
    int ntags = args_all(a, "requires", tags, MAX_REQUIRES + 1);
    if (ntags > 0) {
        cJSON *requires = cJSON_AddArrayToObject(body, "requires");
        for (int i = 0; i < ntags && i <= MAX_REQUIRES; i++) {
            cJSON_AddItemToArray(requires, cJSON_CreateString(tags[i]));
        }
    }
    return body;
}

static int run_enqueue(struct cli *c, const struct args *a)
{
    cJSON *body = enqueue_body(a, "jobq enqueue");
    if (body == NULL) {
        return CLI_USAGE;
    }
    int rc = cmd_send_show(c, "POST", "/jobs", body, NULL);
    cJSON_Delete(body);
    return rc;
}

const struct command cmd_enqueue = {
    "enqueue", "[options] [PAYLOAD]",
    "enqueue a job; PAYLOAD is JSON (read from stdin when absent or -)", enqueue_opts, run_enqueue};

/* ----- get, retry, cancel: one job by id ------------------------------------------------ */

static const struct opt no_opts[] = {{NULL, 0, NULL, NULL}};

/* METHOD /jobs/{id}{suffix} and print the answer. */
static int job_call(struct cli *c, const struct args *a, const char *who, const char *method,
                    const char *suffix, void (*show)(const cJSON *json))
{
    long long id = cmd_job_id(a, who);
    if (id == 0) {
        return CLI_USAGE;
    }
    char path[64];
    snprintf(path, sizeof(path), "/jobs/%lld%s", id, suffix);
    return cmd_send_show(c, method, path, NULL, show);
}

static int run_get(struct cli *c, const struct args *a)
{
    return job_call(c, a, "jobq get", "GET", "", NULL);
}

static int run_retry(struct cli *c, const struct args *a)
{
    return job_call(c, a, "jobq retry", "POST", "/retry", NULL);
}

static int run_cancel(struct cli *c, const struct args *a)
{
    return job_call(c, a, "jobq cancel", "POST", "/cancel", NULL);
}

const struct command cmd_get = {"get", "ID", "show a job", no_opts, run_get};
const struct command cmd_retry = {"retry", "ID", "put a failed or cancelled job back in its queue",
                                  no_opts, run_retry};
const struct command cmd_cancel = {"cancel", "ID", "cancel a queued, blocked or running job",
                                   no_opts, run_cancel};

/* ----- attempts --------------------------------------------------------------------- */

static void show_attempts(const cJSON *json)
{
    static const struct column cols[] = {
        {"ATTEMPT", "attempt", 0, 0},      {"WORKER", "worker_id", 0, 32},
        {"CLAIMED", "claimed_at", 1, 0},   {"ENDED", "ended_at", 1, 0},
        {"OUTCOME", "outcome", 0, 0},      {"ERROR", "error_code", 0, 24},
        {"DETAIL", "error_detail", 0, 48},
    };
    out_rows(cJSON_GetObjectItemCaseSensitive(json, "attempts"), cols,
             sizeof(cols) / sizeof(cols[0]));
}

static int run_attempts(struct cli *c, const struct args *a)
{
    return job_call(c, a, "jobq attempts", "GET", "/attempts", show_attempts);
}

const struct command cmd_attempts = {"attempts", "ID", "list a job's claims, oldest first", no_opts,
                                     run_attempts};

/* ----- deps ------------------------------------------------------------------------- */

static const struct opt deps_opts[] = {
    {"dependents", 'r', NULL, "list the jobs that wait for this one instead"},
    {NULL, 0, NULL, NULL},
};

static const struct column link_cols[] = {
    {"ID", "id", 0, 0},
    {"STATUS", "status", 0, 0},
    {"QUEUE", "queue", 0, 40},
    {"RESULT", "result", 0, 60},
};

static void show_dependencies(const cJSON *json)
{
    out_rows(cJSON_GetObjectItemCaseSensitive(json, "dependencies"), link_cols,
             sizeof(link_cols) / sizeof(link_cols[0]));
}

static void show_dependents(const cJSON *json)
{
    out_rows(cJSON_GetObjectItemCaseSensitive(json, "dependents"), link_cols,
             sizeof(link_cols) / sizeof(link_cols[0]));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json, "more"))) {
        printf("more: only the first 1000 are shown\n");
    }
}

static int run_deps(struct cli *c, const struct args *a)
{
    if (args_has(a, "dependents")) {
        return job_call(c, a, "jobq deps", "GET", "/dependents", show_dependents);
    }
    return job_call(c, a, "jobq deps", "GET", "/dependencies", show_dependencies);
}

const struct command cmd_deps = {
    "deps", "[--dependents] ID",
    "list the jobs a job waits for, with their status and result (or those waiting for it)",
    deps_opts, run_deps};

/* ----- list ------------------------------------------------------------------------- */

static const struct opt list_opts[] = {
    {"queue", 'q', "NAME", "only this queue"},
    {"status", 's', "STATUS", "only jobs in this state (queued, blocked, running, succeeded, ...)"},
    {"limit", 'n', "N", "at most N jobs (default 100, at most 1000)"},
    {"cursor", 0, "CURSOR", "go on from where the previous page ended"},
    {NULL, 0, NULL, NULL},
};

static void show_list(const cJSON *json)
{
    static const struct column cols[] = {
        {"ID", "id", 0, 0},
        {"QUEUE", "queue", 0, 40},
        {"STATUS", "status", 0, 0},
        {"PRIO", "priority", 0, 0},
        {"ATTEMPTS", "attempts", 0, 0},
        {"RUN_AT", "run_at", 1, 0},
        {"ERROR", "error_code", 0, 24},
        {"PAYLOAD", "payload", 0, 40},
    };
    out_rows(cJSON_GetObjectItemCaseSensitive(json, "jobs"), cols, sizeof(cols) / sizeof(cols[0]));
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(json, "next_cursor");
    if (cJSON_IsString(next)) {
        printf("more: jobq list --cursor %s\n", next->valuestring);
    }
}

static int run_list(struct cli *c, const struct args *a)
{
    static const char *const keys[] = {"queue", "status", "limit", "cursor"};
    if (a->npos != 0) {
        fprintf(stderr, "jobq list: unexpected argument '%s' (see jobq list --help)\n", a->pos[0]);
        return CLI_USAGE;
    }
    char *path = strdup("/jobs");
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && path != NULL; i++) {
        const char *v = args_get(a, keys[i]);
        if (v == NULL) {
            continue;
        }
        char *escaped = http_escape(v);
        char *longer = NULL;
        if (escaped == NULL || asprintf(&longer, "%s%c%s=%s", path, strchr(path, '?') ? '&' : '?',
                                        keys[i], escaped) < 0) {
            longer = NULL;
        }
        free(escaped);
        free(path);
        path = longer;
    }
    if (path == NULL) {
        fprintf(stderr, "jobq list: out of memory\n");
        return CLI_UNREACHABLE;
    }
    int rc = cmd_send_show(c, "GET", path, NULL, show_list);
    free(path);
    return rc;
}

const struct command cmd_list = {"list", "[options]", "list jobs, oldest first", list_opts,
                                 run_list};
