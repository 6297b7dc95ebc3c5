/* One job of `jobq work`: start the command, watch it (output, exit, heartbeats, the stop)
 * and report how it ended with the job's lease token. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"
#include "text.h"
#include "work.h"

#define READ_CHUNK 65536
#define HEARTBEAT_MIN_MS 200LL      /* never heartbeat more often */
#define HEARTBEAT_RETRY_MS 1000LL   /* after a failed heartbeat */
#define FINISH_TIMEOUT_MS 10000L    /* one complete or fail request */
#define FINISH_AFTER_STOP_MS 5000LL /* retries of complete/fail once the stop began */
#define FINISH_BACKOFF_MAX_MS 4000LL

/* How the command's run ended. */
enum end { END_EXITED, END_LOST, END_STOPPED };

struct run {
    struct worker *w;
    struct http *h;
    long long id;
    const char *token;      /* the lease token, borrowed from the job */
    long long lease_end_ms; /* when the lease runs out, by our clock */
    struct child ch;
    struct text_buf out;  /* stdout, up to w->max_output bytes */
    int out_overflow;     /* stdout went past max_output (or memory ran out) */
    struct text_tail err; /* the last WORK_STDERR_TAIL bytes of stderr */
};

static long long int_field(const cJSON *job, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, name);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

/* "NAME=value", malloc'ed, or NULL when out of memory. */
static char *env_var(const char *name, long long value)
{
    char *var = NULL;
    return asprintf(&var, "%s=%lld", name, value) < 0 ? NULL : var;
}

/* Append "NAME=value" at env[*k] when the job's string field `field` is set; 0, or -1 when
 * out of memory. */
static int env_text(char **env, size_t *k, const char *name, const cJSON *job, const char *field)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job, field));
    if (v == NULL || *v == '\0') {
        return 0;
    }
    char *var = NULL;
    if (asprintf(&var, "%s=%s", name, v) < 0) {
        return -1;
    }
    env[(*k)++] = var;
    return 0;
}

/* The command's environment: the worker's plus the job's variables, with its trace context
 * (TRACEPARENT and TRACESTATE: the W3C headers of the request that created it, as
 * OpenTelemetry's environment carrier reads them) when it has one. NULL when out of memory;
 * free with free_env(). */
static char **job_env(const struct worker *w, const cJSON *job)
{
    size_t n = 0;
    while (w->env[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 6, sizeof(char *));
    if (env == NULL) {
        return NULL;
    }
    memcpy(env, w->env, n * sizeof(char *));
    env[n] = env_var("JOBQ_JOB_ID", int_field(job, "id"));
    env[n + 1] = env_var("JOBQ_ATTEMPT", int_field(job, "attempts"));
    env[n + 2] = env_var("JOBQ_FENCING_TOKEN", int_field(job, "fencing_token"));
    size_t k = n + 3;
    int bad = env[n] == NULL || env[n + 1] == NULL || env[n + 2] == NULL ||
              env_text(env, &k, "TRACEPARENT", job, "traceparent") != 0;
    if (!bad && k > n + 3) { /* a tracestate only beside its traceparent */
        bad = env_text(env, &k, "TRACESTATE", job, "tracestate") != 0;
    }
    if (bad) {
        for (size_t i = n; i < n + 5; i++) {
            free(env[i]);
        }
        free(env);
        return NULL;
    }
    return env;
}

static void free_env(char **env, const struct worker *w)
{
    if (env == NULL) {
        return;
    }
    size_t n = 0;
    while (w->env[n] != NULL) {
        n++;
    }
    for (size_t i = n; env[i] != NULL; i++) {
        free(env[i]);
    }
    free(env);
}

/* Read what is there on *fd (one chunk) into the run's buffers; close it at end of file. */
static void drain_one(struct run *r, int *fd, int is_out)
{
    char buf[READ_CHUNK];
    ssize_t n = read(*fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    if (!is_out) {
        text_tail_put(&r->err, buf, (size_t)n);
        return;
    }
    size_t take = (size_t)n;
    if (take > r->w->max_output - r->out.len) {
        take = r->w->max_output - r->out.len;
        r->out_overflow = 1; /* the rest is read and dropped: the command never blocks */
    }
    if (text_buf_add(&r->out, buf, take) != 0) {
        r->out_overflow = 1;
    }
}

/* Read what the pipes hold now, without waiting (after the command exited). Bounded: the
 * group was killed, so nothing writes any more. */
static void drain_all(struct run *r)
{
    for (int i = 0; i < 1024 && (r->ch.out_fd >= 0 || r->ch.err_fd >= 0); i++) {
        struct pollfd p[2] = {{.fd = r->ch.out_fd, .events = POLLIN},
                              {.fd = r->ch.err_fd, .events = POLLIN}};
        if (poll(p, 2, 0) <= 0) {
            return;
        }
        if (p[0].revents) {
            drain_one(r, &r->ch.out_fd, 1);
        }
        if (p[1].revents) {
            drain_one(r, &r->ch.err_fd, 0);
        }
    }
}

/* Heartbeat answers, as the watch loop sees them. */
enum beat { BEAT_OK, BEAT_LOST, BEAT_AGAIN };

static enum beat heartbeat(struct run *r)
{
    char path[64];
    snprintf(path, sizeof(path), "/jobs/%lld/heartbeat", r->id);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "lease_token", r->token);
    cJSON_AddNumberToObject(body, "lease_seconds", (double)r->w->lease);
    long long sent = work_now_ms();
    long timeout = (long)(r->w->lease * 1000 / 3);
    timeout = timeout < 2000 ? 2000 : timeout > 10000 ? 10000 : timeout;
    struct http_reply a;
    enum http_outcome o = http_call(r->h, "POST", path, body, timeout, -1, &a);
    cJSON_Delete(body);
    enum beat b = BEAT_AGAIN;
    if (o == HTTP_ANSWERED && a.status == 200) {
        r->lease_end_ms = sent + r->w->lease * 1000;
        b = BEAT_OK;
    } else if (o == HTTP_ANSWERED && (a.status == 409 || a.status == 404)) {
        work_log("job %lld: lease lost on heartbeat (%s), killing the command", r->id,
                 http_error_code(&a) ? http_error_code(&a) : "gone");
        b = BEAT_LOST;
    } else {
        work_log("job %lld: heartbeat failed (%s), trying again", r->id,
                 o == HTTP_ANSWERED ? (http_error_code(&a) ? http_error_code(&a) : "error")
                                    : a.error);
    }
    http_reply_clear(&a);
    return b;
}

/* Watch the command until it exits, its lease is lost or the stop's grace ends; the last
 * two kill its group. Returns how it ended. */
static enum end watch(struct run *r)
{
    struct worker *w = r->w;
    long long every = w->lease * 1000 / 3;
    every = every < HEARTBEAT_MIN_MS ? HEARTBEAT_MIN_MS : every;
    long long next_beat = work_now_ms() + every;
    for (;;) {
        if (spawn_exited(&r->ch)) {
            return END_EXITED;
        }
        long long now = work_now_ms();
        int stopping = atomic_load(&w->stopping);
        long long grace_end = atomic_load(&w->stop_ms) + w->grace * 1000;
        if (stopping && now >= grace_end) {
            work_log("job %lld: still running after --grace %llds, killing it", r->id, w->grace);
            return END_STOPPED;
        }
        if (now >= next_beat) {
            enum beat b = heartbeat(r);
            if (b == BEAT_LOST) {
                return END_LOST;
            }
            if (b == BEAT_AGAIN && work_now_ms() >= r->lease_end_ms) {
                work_log("job %lld: no heartbeat got through before the lease ran out, "
                         "killing the command",
                         r->id);
                return END_LOST;
            }
            next_beat = work_now_ms() + (b == BEAT_OK ? every : HEARTBEAT_RETRY_MS);
            continue;
        }
        long long wait = next_beat - now;
        if (stopping && grace_end - now < wait) {
            wait = grace_end - now;
        }
        if (r->ch.pidfd < 0 && wait > 100) {
            wait = 100; /* no pidfd: look at the command ten times a second */
        }
        struct pollfd p[4] = {{.fd = r->ch.pidfd, .events = POLLIN},
                              {.fd = r->ch.out_fd, .events = POLLIN},
                              {.fd = r->ch.err_fd, .events = POLLIN},
                              {.fd = stopping ? -1 : w->stop_fd[0], .events = POLLIN}};
        if (poll(p, 4, (int)wait) <= 0) {
            continue;
        }
        if (p[1].revents) {
            drain_one(r, &r->ch.out_fd, 1);
        }
        if (p[2].revents) {
            drain_one(r, &r->ch.err_fd, 0);
        }
    }
}

/* POST /jobs/{id}/{action} with body (borrowed; the lease token is added), retrying network
 * errors and 5xx with backoff until the lease would have run out (or, once the stop began,
 * a few seconds). Returns the HTTP status of the answer, 0 when none came; *a holds the
 * answer (release it with http_reply_clear()). */
static long finish(struct run *r, const char *action, cJSON *body, struct http_reply *a)
{
    char path[64];
    snprintf(path, sizeof(path), "/jobs/%lld/%s", r->id, action);
    cJSON_AddStringToObject(body, "lease_token", r->token);
    long long delay = 250;
    for (int attempt = 1;; attempt++) {
        enum http_outcome o = http_call(r->h, "POST", path, body, FINISH_TIMEOUT_MS, -1, a);
        if (o == HTTP_ANSWERED && a->status < 500) {
            return a->status;
        }
        long long now = work_now_ms(), until = r->lease_end_ms;
        if (atomic_load(&r->w->stopping)) {
            long long cut = atomic_load(&r->w->stop_ms) + r->w->grace * 1000 + FINISH_AFTER_STOP_MS;
            until = cut < until ? cut : until;
        }
        if (now + delay >= until) {
            work_log("job %lld: gave up on %s after %d tries; the lease will expire and the "
                     "job be retried",
                     r->id, action, attempt);
            return 0;
        }
        work_log("job %lld: %s failed (%s), retry %d with the same token", r->id, action,
                 o == HTTP_ANSWERED ? "5xx" : a->error, attempt);
        http_reply_clear(a);
        usleep((useconds_t)(delay * 1000));
        delay = delay * 2 > FINISH_BACKOFF_MAX_MS ? FINISH_BACKOFF_MAX_MS : delay * 2;
    }
}

/* Fail the job with error_code and error_detail (borrowed, may be NULL); the server retries
 * it while attempts remain. */
static void fail_job(struct run *r, const char *code, const char *detail)
{
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "error_code", code);
    cJSON_AddStringToObject(body, "error_detail", detail ? detail : "");
    struct http_reply a;
    long status = finish(r, "fail", body, &a);
    cJSON_Delete(body);
    if (status == 200) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(a.json, "status");
        work_log("job %lld: failed (%s), now %s", r->id, code,
                 cJSON_IsString(st) ? st->valuestring : "?");
    } else if (status == 409) {
        work_log("job %lld: lease lost on fail, dropping it", r->id);
    } else if (status != 0) {
        const char *m = http_error_message(&a);
        work_log("job %lld: fail refused (%ld): %s", r->id, status, m ? m : "?");
    }
    http_reply_clear(&a);
}

/* The result from stdout: null when it is blank, its JSON when it parses, else a string
 * (invalid UTF-8 replaced by U+FFFD). */
static cJSON *result_value(const struct run *r)
{
    size_t n = r->out.len;
    while (n > 0 && strchr(" \t\r\n", r->out.data[n - 1]) != NULL) {
        n--;
    }
    if (n == 0) {
        return cJSON_CreateNull();
    }
    char *text = text_utf8_clean(r->out.data, r->out.len);
    if (text == NULL) {
        return NULL;
    }
    cJSON *v = text_parse_json(text, strlen(text));
    if (v == NULL) { /* a string, without its trailing newlines (as sh's $(...)) */
        size_t len = strlen(text);
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) {
            text[--len] = '\0';
        }
        v = cJSON_CreateString(text);
    }
    free(text);
    return v;
}

static void complete_job(struct run *r)
{
    if (r->out_overflow) {
        char detail[128];
        snprintf(detail, sizeof(detail), "stdout was longer than --max-output %zu bytes",
                 r->w->max_output);
        fail_job(r, "output_too_large", detail);
        return;
    }
    cJSON *body = cJSON_CreateObject();
    cJSON *result = result_value(r);
    if (body == NULL || result == NULL) {
        cJSON_Delete(body);
        cJSON_Delete(result);
        fail_job(r, "worker_error", "out of memory");
        return;
    }
    cJSON_AddItemToObject(body, "result", result);
    struct http_reply a;
    long status = finish(r, "complete", body, &a);
    cJSON_Delete(body);
    if (status == 200) {
        work_log("job %lld: completed", r->id);
    } else if (status == 409) {
        work_log("job %lld: lease lost on complete, dropping it", r->id);
    } else if (status != 0) { /* the result itself was refused (too large, too deep) */
        const char *code = http_error_code(&a), *m = http_error_message(&a);
        char detail[512];
        snprintf(detail, sizeof(detail), "the server refused the result: %s: %s", code ? code : "?",
                 m ? m : "?");
        work_log("job %lld: %s", r->id, detail);
        fail_job(r, "result_rejected", detail);
    }
    http_reply_clear(&a);
}

/* Report how the command ended (a wait status). */
static void report(struct run *r, enum end end, int wstatus)
{
    char code[32];
    char *tail = text_tail_string(&r->err);
    if (end == END_STOPPED) {
        char *detail = NULL;
        if (asprintf(&detail,
                     "jobq work was stopped and the command ran past --grace %llds; "
                     "stderr: %s",
                     r->w->grace, tail ? tail : "") < 0) {
            detail = NULL;
        }
        fail_job(r, "worker_stopped", detail);
        free(detail);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        complete_job(r);
    } else {
        if (WIFSIGNALED(wstatus)) {
            snprintf(code, sizeof(code), "signal_%d", WTERMSIG(wstatus));
        } else {
            snprintf(code, sizeof(code), "exit_%d", WEXITSTATUS(wstatus));
        }
        fail_job(r, code, tail);
    }
    free(tail);
}

void work_job(struct worker *w, struct http *h, const cJSON *job)
{
    struct run r = {.w = w, .h = h, .id = int_field(job, "id")};
    r.lease_end_ms = work_now_ms() + w->lease * 1000;
    const cJSON *token = cJSON_GetObjectItemCaseSensitive(job, "lease_token");
    if (!cJSON_IsString(token) || r.id <= 0) {
        work_log("the claim's answer has no job id or lease token: skipping it");
        return;
    }
    r.token = token->valuestring;
    /* The payload as one line of JSON, newline-terminated (sh's `read` wants the newline). */
    char *payload = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(job, "payload"));
    char *line = NULL;
    if (payload == NULL || asprintf(&line, "%s\n", payload) < 0) {
        line = NULL;
    }
    free(payload);
    char **env = job_env(w, job);
    int rc = ENOMEM;
    if (line != NULL && env != NULL && text_tail_init(&r.err, WORK_STDERR_TAIL) == 0) {
        rc = spawn_start(&r.ch, w->argv, env, line, strlen(line));
    }
    free(line);
    free_env(env, w);
    if (rc != 0) {
        char detail[512];
        snprintf(detail, sizeof(detail), "cannot run %s: %s", w->argv[0], strerror(rc));
        work_log("job %lld: %s", r.id, detail);
        fail_job(&r, "spawn_failed", detail);
        text_tail_clear(&r.err);
        return;
    }
    work_log("job %lld: running (attempt %lld, pid %ld)", r.id, int_field(job, "attempts"),
             (long)r.ch.pid);
    enum end end = watch(&r);
    int wstatus = 0;
    spawn_reap(&r.ch, &wstatus); /* kills what is left in its group */
    drain_all(&r);
    spawn_close(&r.ch);
    if (end != END_LOST) {
        report(&r, end, wstatus);
    }
    text_buf_clear(&r.out);
    text_tail_clear(&r.err);
}
