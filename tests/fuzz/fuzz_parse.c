/* libFuzzer target: the request path without HTTP, fast. The input is a request line, a
 * newline and a body:
 *
 *     POST /jobs/42/fail?limit=10\n{"lease_token": "x", "retry": false}
 *
 * It runs router_match() on the method and path, the GET /jobs query readers on the query,
 * json_validate() and fields_parse_body() on the body and, when that gives an object, every
 * body reader of parse.h on it (as POST /jobs, as each element of a batch, as a claim, a
 * heartbeat, a complete and a fail). Besides what the sanitizers catch it checks invariants
 * that, when broken, mean a wrong answer rather than a crash (abort() names them):
 * - a body json_validate() accepts is parsed by cJSON (else the server answers 500);
 * - the span readers (json_member, json_array_next, json_compact) agree with cJSON about
 *   every member and element: same count, same value once re-parsed;
 * - a cursor that parses formats back to the same text;
 * - an {id} that matched is positive.
 * Built with -fsanitize=fuzzer for fuzzing, or with replay.c to run a corpus (ctest). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "jsonin.h"
#include "parse.h"
#include "router.h"

/* A fixed "now" keeps run_at checks deterministic. */
#define FUZZ_NOW 1763700000LL
/* Longest request line looked at; the rest of a longer line is ignored. */
#define LINE_MAX_BYTES 2048
/* Query values looked at, each at most this long. */
#define QUERY_VALUE_MAX 512

#define INVARIANT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_parse: invariant broken at %s:%d: %s\n", __FILE__, __LINE__,     \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of d[0..n) (NULs inside stay; the string just looks shorter). */
static char *copy_text(const uint8_t *d, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, d, n);
    s[n] = '\0';
    return s;
}

/* Copy the value of `key` in the query string q (a&b=c form, no decoding) into out; NULL when
 * absent. */
static const char *query_value(const char *q, const char *key, char *out, size_t len)
{
    size_t klen = strlen(key);
    while (q && *q) {
        size_t n = strcspn(q, "&");
        if (n > klen && memcmp(q, key, klen) == 0 && q[klen] == '=') {
            size_t v = n - klen - 1;
            if (v >= len)
                v = len - 1;
            memcpy(out, q + klen + 1, v);
            out[v] = '\0';
            return out;
        }
        q += n;
        if (*q == '&')
            q++;
    }
    return NULL;
}

static void check_route(const char *method, const char *path)
{
    const struct route *r = NULL;
    long long id = -1;
    char allow[64];
    enum route_match m = router_match(method, path, &r, &id, allow, sizeof allow);
    if (m == ROUTE_FOUND) {
        INVARIANT(r != NULL);
        INVARIANT(strcmp(r->method, method) == 0);
        INVARIANT(id >= 0);
        INVARIANT((id > 0) == (strstr(r->pattern, "{id}") != NULL));
    } else if (m == ROUTE_BAD_METHOD) {
        INVARIANT(allow[0] != '\0');
    }
    /* A tiny allow buffer must be cut, never overflowed. */
    char small[4];
    router_match(method, path, &r, &id, small, sizeof small);
    INVARIANT(memchr(small, '\0', sizeof small) != NULL);
}

static void check_query(const char *q)
{
    char queue[QUERY_VALUE_MAX], status[QUERY_VALUE_MAX], limit[QUERY_VALUE_MAX],
        cursor[QUERY_VALUE_MAX];
    struct fields f;
    struct jspan none = {"", 0};
    struct list_filter filter;
    fields_init(&f, NULL, none, NULL);
    const char *c = query_value(q, "cursor", cursor, sizeof cursor);
    if (parse_list_query(&f, query_value(q, "queue", queue, sizeof queue),
                         query_value(q, "status", status, sizeof status),
                         query_value(q, "limit", limit, sizeof limit), c, &filter) == 0) {
        INVARIANT(filter.limit >= 1 && filter.limit <= JOB_LIST_MAX);
        INVARIANT(filter.after_id >= 0);
    } else {
        INVARIANT(f.msg[0] != '\0');
    }
    int64_t after = 0;
    if (c && cursor_parse(c, &after) == 0) {
        char back[24];
        cursor_format(after, back, sizeof back);
        INVARIANT(strcmp(back, c) == 0);
    }
}

/* The compact text of the span, re-parsed and printed, equals cJSON's print of item. */
static void check_same_value(struct jspan span, const cJSON *item)
{
    char *compact = json_compact(span);
    INVARIANT(compact != NULL);
    INVARIANT(json_validate(compact, strlen(compact), NULL) == JV_OK);
    cJSON *again = cJSON_ParseWithLengthOpts(compact, strlen(compact) + 1, NULL, 1);
    INVARIANT(again != NULL);
    char *a = cJSON_PrintUnformatted(again);
    char *b = cJSON_PrintUnformatted(item);
    INVARIANT(a && b);
    INVARIANT(strcmp(a, b) == 0);
    cJSON_free(a);
    cJSON_free(b);
    cJSON_Delete(again);
    free(compact);
}

/* Every member of the object (by the first of its name) and every element of an array
 * member agree between the spans and cJSON. */
static void check_spans(struct jspan obj, const cJSON *root)
{
    const cJSON *child;
    cJSON_ArrayForEach(child, root)
    {
        struct jspan v;
        INVARIANT(child->string != NULL);
        INVARIANT(json_member(obj, child->string, &v) == 1);
        const cJSON *first = cJSON_GetObjectItemCaseSensitive(root, child->string);
        INVARIANT(first != NULL);
        check_same_value(v, first);
        if (first != child || !cJSON_IsArray(first))
            continue;
        size_t pos = 0, count = 0;
        struct jspan el;
        const cJSON *item = first->child;
        while (json_array_next(v, &pos, &el)) {
            INVARIANT(item != NULL);
            check_same_value(el, item);
            item = item->next;
            count++;
        }
        INVARIANT(item == NULL);
        INVARIANT(count == (size_t)cJSON_GetArraySize(first));
    }
}

static void check_error(const struct fields *f)
{
    INVARIANT(f->code == ERR_INVALID_REQUEST || f->code == ERR_INVALID_JSON);
    INVARIANT(f->msg[0] != '\0');
}

/* Every body reader over one parsed object. */
static void run_readers(const cJSON *root, struct jspan span)
{
    struct fields f;
    struct job_spec spec;
    struct spec_buf buf;
    fields_init(&f, root, span, NULL);
    if (parse_job_spec(&f, &spec, &buf) == 0) {
        INVARIANT(spec.payload != NULL && job_queue_name_ok(spec.queue));
        INVARIANT(json_validate(spec.payload, strlen(spec.payload), NULL) == JV_OK);
        INVARIANT(spec.max_attempts >= 1 && spec.max_attempts <= JOB_ATTEMPTS_MAX);
        INVARIANT(spec.run_at >= 0 || spec.run_at == JOB_NONE);
        INVARIANT(spec.delay >= 0 && spec.delay <= JOB_DELAY_MAX);
        INVARIANT(spec.run_at == JOB_NONE || spec.delay == 0);
    } else {
        check_error(&f);
    }
    spec_buf_clear(&buf);

    /* As a batch: each element of "jobs" with its own prefix, as handle_enqueue_batch. */
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    struct jspan text;
    if (cJSON_IsArray(jobs) && json_member(span, "jobs", &text)) {
        size_t pos = 0, i = 0;
        const cJSON *el;
        cJSON_ArrayForEach(el, jobs)
        {
            struct jspan es;
            INVARIANT(json_array_next(text, &pos, &es));
            if (cJSON_IsObject(el)) {
                char prefix[32];
                snprintf(prefix, sizeof prefix, "jobs[%zu].", i);
                fields_init(&f, el, es, prefix);
                if (parse_job_spec(&f, &spec, &buf) < 0) {
                    check_error(&f);
                    INVARIANT(strstr(f.msg, prefix) != NULL);
                }
                spec_buf_clear(&buf);
            }
            i++;
        }
    }

    struct claim_args c;
    fields_init(&f, root, span, NULL);
    if (parse_claim(&f, &c) == 0) {
        INVARIANT(c.worker_id && c.nqueues >= 1 && c.nqueues <= JOB_QUEUES_MAX);
        for (size_t i = 0; i < c.nqueues; i++)
            INVARIANT(job_queue_name_ok(c.queues[i]));
        INVARIANT(c.max_jobs >= 1 && c.max_jobs <= JOB_CLAIM_MAX);
        INVARIANT(c.wait_seconds >= 0 && c.wait_seconds <= JOB_WAIT_MAX);
    } else {
        check_error(&f);
    }
    claim_args_clear(&c);

    int (*lease_parsers[])(struct fields *, struct lease_args *) = {parse_heartbeat, parse_complete,
                                                                    parse_fail};
    for (size_t k = 0; k < sizeof lease_parsers / sizeof lease_parsers[0]; k++) {
        struct lease_args a;
        fields_init(&f, root, span, NULL);
        if (lease_parsers[k](&f, &a) == 0) {
            INVARIANT(a.lease_token != NULL && a.lease_token[0] != '\0');
            INVARIANT(!a.json || json_validate(a.json, strlen(a.json), NULL) == JV_OK);
        } else {
            check_error(&f);
        }
        lease_args_clear(&a);
    }
}

static void check_body(const uint8_t *data, size_t size)
{
    char *body = copy_text(data, size);
    size_t where = 0;
    enum jv v = json_validate(body, size, &where);
    INVARIANT(v == JV_OK || where <= size);

    struct fields f;
    cJSON *root = NULL;
    int rc = fields_parse_body(&f, &root, size ? body : NULL, size);
    if (rc < 0) {
        /* ERR_INTERNAL would be a 500: a body we validated that cJSON would not parse. */
        check_error(&f);
        INVARIANT(root == NULL);
        INVARIANT((v == JV_OK) == (f.code == ERR_INVALID_REQUEST));
    } else {
        INVARIANT(v == JV_OK || size == 0);
        INVARIANT(cJSON_IsObject(root));
        struct jspan span = size ? (struct jspan){body, size} : (struct jspan){"{}", 2};
        check_spans(span, root);
        run_readers(root, span);
        cJSON_Delete(root);
    }
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t line_len = nl ? (size_t)(nl - data) : size;
    const uint8_t *body = nl ? nl + 1 : data + size;
    size_t body_len = (size_t)(data + size - body);

    char *line = copy_text(data, line_len < LINE_MAX_BYTES ? line_len : LINE_MAX_BYTES);
    char *sp = strchr(line, ' ');
    const char *method = line, *target = "";
    if (sp) {
        *sp = '\0';
        target = sp + 1;
    }
    char *path = copy_text((const uint8_t *)target, strlen(target));
    char *q = strchr(path, '?');
    if (q)
        *q++ = '\0';
    check_route(method, path);
    check_query(q);
    check_body(body, body_len);
    free(path);
    free(line);
    return 0;
}
