/* jobq events: one page of the event log (GET /events as JSON), or with --follow its stream
 * (Server-Sent Events), one line per event, resumed with Last-Event-ID when it drops. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "text.h"

#define BACKOFF_FIRST_MS 250LL
#define BACKOFF_MAX_MS 8000LL
#define EVENTS_QUEUES_MAX 32       /* --queue given more often is a usage error */
#define EVENT_FIELD_MAX (1u << 20) /* a longer SSE line is a broken stream */

static const struct opt events_opts[] = {
    {"follow", 'f', NULL, "print the stream as it comes; reconnect when it drops"},
    {"queue", 'q', "NAME", "only events of this queue (repeat for more)"},
    {"job", 0, "ID", "only events of this job"},
    {"types", 0, "T,T", "only these types (job.created,job.succeeded,...)"},
    {"after", 0, "SEQ", "start after this seq (default: 0, all that is kept)"},
    {"limit", 0, "N", "without --follow: at most N events (1-1000, default 100)"},
    {"count", 0, "N", "with --follow: stop after N events"},
    {NULL, 0, NULL, NULL},
};

/* The stop pipe: SIGINT or SIGTERM writes to it, the stream and the backoff watch it. */
static int stop_fd[2] = {-1, -1};

static void on_signal(int sig)
{
    (void)sig;
    char byte = 1;
    ssize_t n = write(stop_fd[1], &byte, 1);
    (void)n;
}

/* The query of GET /events from the options (without after): "?queue=a&job=1" or "". NULL
 * when out of memory, or after a usage error (*usage set). */
static char *build_query(const struct args *a, int *usage)
{
    const char *queues[EVENTS_QUEUES_MAX];
    int nq = args_all(a, "queue", queues, EVENTS_QUEUES_MAX);
    if (nq > EVENTS_QUEUES_MAX) {
        fprintf(stderr, "jobq events: at most %d --queue\n", EVENTS_QUEUES_MAX);
        *usage = 1;
        return NULL;
    }
    struct text_buf q = {0};
    int bad = text_buf_add(&q, "", 0);
    const char *names[] = {"job", "types", "limit"};
    for (int i = 0; i < nq + 3 && !bad; i++) {
        const char *name = i < nq ? "queue" : names[i - nq];
        const char *v = i < nq ? queues[i] : args_get(a, name);
        if (v == NULL || (i == nq + 2 && args_has(a, "follow"))) {
            continue;
        }
        char *e = http_escape(v);
        char *part = NULL;
        if (e == NULL || asprintf(&part, "%c%s=%s", q.len ? '&' : '?', name, e) < 0) {
            part = NULL;
        }
        bad = part == NULL || text_buf_add(&q, part, strlen(part)) != 0;
        free(e);
        free(part);
    }
    if (bad) {
        text_buf_clear(&q);
        return NULL;
    }
    return q.data;
}

/* One SSE stream being read: the partial line, the event being built, where it resumes. */
struct reader {
    struct cli *c;
    struct text_buf line;
    char *id, *type;
    struct text_buf data;
    char last_id[32];     /* the seq of the last event printed ("" before any) */
    long long count, max; /* events printed; stop at max (0: never) */
    int got;              /* an event came on this connection */
};

/* Print one event (or the gap) as JSON or as a readable line. */
static void print_event(struct reader *r, const char *type, const cJSON *d)
{
    if (strcmp(type, "gap") == 0) {
        const cJSON *after = cJSON_GetObjectItemCaseSensitive(d, "after");
        const cJSON *oldest = cJSON_GetObjectItemCaseSensitive(d, "oldest");
        long long a = cJSON_IsNumber(after) ? (long long)after->valuedouble : 0;
        long long o = cJSON_IsNumber(oldest) ? (long long)oldest->valuedouble : 0;
        if (r->c->json) {
            printf("{\"type\":\"gap\",\"after\":%lld,\"oldest\":%lld}\n", a, o);
        } else {
            printf("-- gap: the events after seq %lld are no longer kept (the oldest is %lld); "
                   "changes between them were missed --\n",
                   a, o);
        }
        fprintf(stderr, "jobq events: gap after seq %lld: events up to seq %lld were pruned\n", a,
                o);
        return;
    }
    if (r->c->json) {
        fputs(r->data.data ? r->data.data : "null", stdout);
        fputc('\n', stdout);
        return;
    }
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(d, "job");
    const char *f[] = {"id", "queue", "status", "attempts", "error_code"};
    char *cell[5];
    for (int i = 0; i < 5; i++) {
        cell[i] = out_cell(cJSON_GetObjectItemCaseSensitive(job, f[i]), 60);
    }
    char *at = out_time(cJSON_GetObjectItemCaseSensitive(d, "at"));
    const char *tp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "traceparent"));
    printf("%s  %s  %-14s job %s  queue %s  %s  attempts %s", r->id ? r->id : "-", at ? at : "-",
           type, cell[0] ? cell[0] : "-", cell[1] ? cell[1] : "-", cell[2] ? cell[2] : "-",
           cell[3] ? cell[3] : "-");
    if (cell[4] != NULL && strcmp(cell[4], "-") != 0) {
        printf("  error %s", cell[4]);
    }
    if (tp != NULL && strlen(tp) > 35) {
        printf("  trace %.32s", tp + 3);
    }
    fputc('\n', stdout);
    for (int i = 0; i < 5; i++) {
        free(cell[i]);
    }
    free(at);
}

/* The blank line that ends an event: print it, keep its id as the resume point. Returns 1
 * when --count is reached, else 0. */
static int dispatch(struct reader *r)
{
    int done = 0;
    if (r->type != NULL || r->data.len > 0) {
        cJSON *d = r->data.data ? cJSON_ParseWithLength(r->data.data, r->data.len) : NULL;
        const char *type = r->type ? r->type : "message";
        print_event(r, type, d);
        cJSON_Delete(d);
        fflush(stdout);
        if (strcmp(type, "gap") != 0) {
            if (r->id != NULL) {
                snprintf(r->last_id, sizeof(r->last_id), "%s", r->id);
            }
            r->got = 1;
            done = r->max > 0 && ++r->count >= r->max;
        }
    }
    free(r->id);
    free(r->type);
    r->id = r->type = NULL;
    text_buf_clear(&r->data);
    return done;
}

/* One line of the stream (without its end of line). Returns 1 to stop, -1 on a broken
 * stream or out of memory, else 0. */
static int on_line(struct reader *r, char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '\r') {
        s[--n] = '\0';
    }
    if (n == 0) {
        return dispatch(r);
    }
    if (s[0] == ':') {
        return 0; /* a comment: the keep-alive */
    }
    char *colon = memchr(s, ':', n);
    const char *v = colon ? colon + 1 + (colon[1] == ' ') : s + n;
    size_t name_len = colon ? (size_t)(colon - s) : n;
    if (name_len == 2 && strncmp(s, "id", 2) == 0) {
        free(r->id);
        r->id = strdup(v);
        return r->id ? 0 : -1;
    }
    if (name_len == 5 && strncmp(s, "event", 5) == 0) {
        free(r->type);
        r->type = strdup(v);
        return r->type ? 0 : -1;
    }
    if (name_len == 4 && strncmp(s, "data", 4) == 0) {
        if (r->data.len > 0 && text_buf_add(&r->data, "\n", 1) != 0) {
            return -1;
        }
        return text_buf_add(&r->data, v, strlen(v)) != 0 ? -1 : 0;
    }
    return 0; /* a field SSE readers ignore */
}

static int on_data(void *arg, const char *data, size_t len)
{
    struct reader *r = arg;
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n') {
            if (r->line.len >= EVENT_FIELD_MAX || text_buf_add(&r->line, data + i, 1) != 0) {
                return -1;
            }
            continue;
        }
        int rc = on_line(r, r->line.data ? r->line.data : (char *)"", r->line.len);
        text_buf_clear(&r->line);
        if (rc != 0) {
            return -1; /* stop (--count) or broken: the caller tells which */
        }
    }
    return 0;
}

/* Wait ms unless a signal comes first: 1 when it did. */
static int pause_ms(long long ms)
{
    struct pollfd p = {.fd = stop_fd[0], .events = POLLIN};
    return poll(&p, 1, (int)ms) > 0;
}

static int follow(struct cli *c, const char *query, const char *after, long long max)
{
    struct reader r = {.c = c, .max = max};
    snprintf(r.last_id, sizeof(r.last_id), "%s", after ? after : "");
    long long backoff = BACKOFF_FIRST_MS;
    int rc = CLI_OK;
    for (;;) {
        struct http_reply rep;
        r.got = 0;
        enum http_outcome o = http_stream(c->http, query, r.last_id[0] ? r.last_id : NULL, on_data,
                                          &r, stop_fd[0], &rep);
        text_buf_clear(&r.line);
        free(r.id);
        free(r.type);
        r.id = r.type = NULL;
        text_buf_clear(&r.data);
        if (r.max > 0 && r.count >= r.max) {
            http_reply_clear(&rep);
            break;
        }
        if (o == HTTP_CANCELLED) {
            http_reply_clear(&rep);
            break;
        }
        if (o == HTTP_ANSWERED && rep.status >= 400 && rep.status < 500) {
            const char *code = http_error_code(&rep), *msg = http_error_message(&rep);
            fprintf(stderr, "jobq: %s: %s\n", code ? code : "refused",
                    msg ? msg : (rep.body ? rep.body : ""));
            http_reply_clear(&rep);
            rc = CLI_REFUSED;
            break;
        }
        if (r.got) {
            backoff = BACKOFF_FIRST_MS;
        }
        fprintf(stderr, "jobq events: the stream ended (%s); resuming after seq %s in %lld ms\n",
                o == HTTP_ANSWERED ? (rep.status < 300 ? "closed by the server" : "server error")
                                   : rep.error,
                r.last_id[0] ? r.last_id : "0", backoff);
        http_reply_clear(&rep);
        if (pause_ms(backoff)) {
            break;
        }
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    text_buf_clear(&r.line);
    return rc;
}

static int run_events(struct cli *c, const struct args *a)
{
    long long n = 0;
    if (a->npos != 0) {
        fprintf(stderr, "jobq events: unexpected argument '%s' (see jobq events --help)\n",
                a->pos[0]);
        return CLI_USAGE;
    }
    if (args_int(a, "count", 1, 1000000000LL, &n, "jobq events") != 0 ||
        args_int(a, "after", 0, 9223372036854775807LL, &(long long){0}, "jobq events") != 0) {
        return CLI_USAGE;
    }
    int usage = 0;
    char *query = build_query(a, &usage);
    if (query == NULL) {
        if (!usage) {
            fprintf(stderr, "jobq events: out of memory\n");
        }
        return usage ? CLI_USAGE : CLI_UNREACHABLE;
    }
    const char *after = args_get(a, "after");
    int rc;
    if (!args_has(a, "follow")) {
        char *path = NULL;
        if (asprintf(&path, "/events%s%cafter=%s", query, query[0] ? '&' : '?',
                     after ? after : "0") < 0) {
            path = NULL;
        }
        struct http_reply r;
        rc = path ? cli_request(c, "GET", path, NULL, &r) : CLI_UNREACHABLE;
        if (path && rc == CLI_OK) {
            out_json(&r);
        }
        if (path) {
            http_reply_clear(&r);
        }
        free(path);
        free(query);
        return rc;
    }
    char *path = NULL;
    if (asprintf(&path, "/events%s", query) < 0 || pipe2(stop_fd, O_CLOEXEC) != 0) {
        fprintf(stderr, "jobq events: %s\n", strerror(errno));
        free(query);
        return CLI_UNREACHABLE;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = follow(c, path, after, n);
    free(path);
    free(query);
    return rc;
}

const struct command cmd_events = {
    "events", "[--follow] [options]",
    "print the event log: one JSON page, or the live stream with --follow", events_opts,
    run_events};
