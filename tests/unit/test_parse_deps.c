/* parse: the workflow fields of an enqueue (depends_on, on_dependency_failure, ref) and the
 * batch's refs, duplicates and cycles (parse_single_deps, parse_batch_deps). */
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "parse_deps.h"
#include "testlib.h"

#define BATCH_MAX 8

/* A parsed batch (or a one-element POST /jobs body). */
struct batch {
    cJSON *root;
    size_t n;
    struct job_spec specs[BATCH_MAX];
    struct spec_buf bufs[BATCH_MAX];
    char msg[256];
};

static void batch_done(struct batch *b)
{
    for (size_t i = 0; i < BATCH_MAX; i++)
        spec_buf_clear(&b->bufs[i]);
    cJSON_Delete(b->root);
    memset(b, 0, sizeof *b);
}

/* Parse body as POST /jobs does. Returns 0 or -1 (message in b->msg). */
static int single_of(const char *body, struct batch *b)
{
    struct fields f;
    memset(b, 0, sizeof *b);
    int r = fields_parse_body(&f, &b->root, body, strlen(body));
    if (r == 0)
        r = parse_job_spec(&f, &b->specs[0], &b->bufs[0]);
    if (r == 0)
        r = parse_single_deps(&f, &b->specs[0], &b->bufs[0]);
    b->n = 1;
    snprintf(b->msg, sizeof b->msg, "%s", r < 0 ? f.msg : "");
    return r;
}

/* Parse the elements (JSON objects) as POST /jobs/batch does. Returns 0 or -1. */
static int batch_of(const char *const *elements, size_t n, struct batch *b)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    struct fields f;
    int r = 0;
    cJSON *roots[BATCH_MAX] = {0};
    for (size_t i = 0; i < n && r == 0; i++) {
        r = fields_parse_body(&f, &roots[i], elements[i], strlen(elements[i]));
        char prefix[32];
        snprintf(prefix, sizeof prefix, "jobs[%zu].", i);
        if (r == 0) {
            struct jspan span = f.span;
            fields_init(&f, roots[i], span, prefix);
            r = parse_job_spec(&f, &b->specs[i], &b->bufs[i]);
            if (r == 0)
                r = parse_batch_ref(&f, &b->bufs[i]);
        }
    }
    if (r == 0)
        r = parse_batch_deps(&f, b->specs, b->bufs, n);
    snprintf(b->msg, sizeof b->msg, "%s", r < 0 ? f.msg : "");
    /* Keep the elements' trees alive under one root: refs borrow from them. */
    b->root = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        if (roots[i])
            cJSON_AddItemToArray(b->root, roots[i]);
    }
    return r;
}

TEST(ids_modes_and_defaults)
{
    struct batch b;
    CHECK_INT(single_of("{\"payload\":1}", &b), 0);
    CHECK_INT(b.specs[0].ndeps, 0);
    CHECK(b.specs[0].deps == NULL);
    CHECK_INT(b.specs[0].on_dependency_failure, DEP_CANCEL);
    batch_done(&b);

    CHECK_INT(single_of("{\"payload\":1,\"depends_on\":[],\"on_dependency_failure\":null}", &b), 0);
    CHECK_INT(b.specs[0].ndeps, 0);
    batch_done(&b);

    CHECK_INT(single_of("{\"payload\":1,\"depends_on\":[7,3,7,1e1,3,9223372036854774784],"
                        "\"on_dependency_failure\":\"run\"}",
                        &b),
              0);
    /* Repeated entries count once, the first of each kept in place. */
    CHECK_INT(b.specs[0].ndeps, 4);
    CHECK_INT(b.specs[0].deps[0].id, 7);
    CHECK_INT(b.specs[0].deps[1].id, 3);
    CHECK_INT(b.specs[0].deps[2].id, 10);
    CHECK(b.specs[0].deps[3].id == 9223372036854774784LL); /* the largest double below 2^63 */
    CHECK_INT(b.specs[0].on_dependency_failure, DEP_RUN);
    batch_done(&b);

    /* ref is a batch element's: POST /jobs ignores it as an unknown field. */
    CHECK_INT(single_of("{\"payload\":1,\"ref\":7}", &b), 0);
    batch_done(&b);
    CHECK_INT(single_of("{\"payload\":1,\"on_dependency_failure\":\"cancel\"}", &b), 0);
    CHECK_INT(b.specs[0].on_dependency_failure, DEP_CANCEL);
    batch_done(&b);
}

TEST(single_refusals_name_the_field)
{
    const char *bad[][2] = {
        {"{\"payload\":1,\"depends_on\":5}", "depends_on must be an array"},
        {"{\"payload\":1,\"depends_on\":{}}", "depends_on must be an array"},
        {"{\"payload\":1,\"depends_on\":[0]}", "depends_on[0] must be a job id"},
        {"{\"payload\":1,\"depends_on\":[1,-4]}", "depends_on[1] must be a job id"},
        {"{\"payload\":1,\"depends_on\":[1,2.5]}", "depends_on[1] must be a job id"},
        {"{\"payload\":1,\"depends_on\":[9223372036854775808]}", "depends_on[0]"},
        {"{\"payload\":1,\"depends_on\":[1,null]}", "depends_on[1]"},
        {"{\"payload\":1,\"depends_on\":[true]}", "depends_on[0]"},
        {"{\"payload\":1,\"depends_on\":[\"\"]}", "depends_on[0]"},
        {"{\"payload\":1,\"depends_on\":[3,\"a\"]}",
         "depends_on[1] must be a job id: a ref (a string) names an element of the same "
         "POST /jobs/batch"},
        {"{\"payload\":1,\"depends_on\":[\"a\\u0000\"]}", "depends_on must not contain a NUL"},
        {"{\"payload\":1,\"on_dependency_failure\":\"later\"}",
         "on_dependency_failure must be \"cancel\" or \"run\""},
        {"{\"payload\":1,\"on_dependency_failure\":1}", "on_dependency_failure must be"},
        {"{\"payload\":1,\"on_dependency_failure\":\"RUN\"}", "on_dependency_failure must be"},
    };
    struct batch b;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int r = single_of(bad[i][0], &b);
        if (r == 0 || !strstr(b.msg, bad[i][1]))
            fprintf(stderr, "body %s: r=%d msg \"%s\", want \"%s\"\n", bad[i][0], r, b.msg,
                    bad[i][1]);
        CHECK_INT(r, -1);
        CHECK(strstr(b.msg, bad[i][1]) != NULL);
        batch_done(&b);
    }
}

/* The limits: JOB_DEPS_MAX entries and refs of JOB_REF_MAX bytes, one more is refused. */
TEST(limits_at_the_edge)
{
    size_t cap = 16 + JOB_DEPS_MAX * 8;
    char *body = malloc(cap);
    CHECK(body != NULL);
    for (int extra = 0; extra <= 1; extra++) {
        size_t at = (size_t)snprintf(body, cap, "{\"payload\":1,\"depends_on\":[");
        for (int k = 1; k <= JOB_DEPS_MAX + extra; k++)
            at += (size_t)snprintf(body + at, cap - at, "%s%d", k > 1 ? "," : "", k);
        snprintf(body + at, cap - at, "]}");
        struct batch b;
        int r = single_of(body, &b);
        if (extra == 0) {
            CHECK_INT(r, 0);
            CHECK_INT(b.specs[0].ndeps, JOB_DEPS_MAX);
        } else {
            CHECK_INT(r, -1);
            CHECK(strstr(b.msg, "depends_on must be an array of at most 1000") != NULL);
        }
        batch_done(&b);
    }
    free(body);

    char ref[JOB_REF_MAX + 2];
    memset(ref, 'r', sizeof ref);
    for (int extra = 0; extra <= 1; extra++) {
        ref[JOB_REF_MAX + extra] = '\0';
        char el0[300], el1[300];
        snprintf(el0, sizeof el0, "{\"payload\":1,\"ref\":\"%s\"}", ref);
        snprintf(el1, sizeof el1, "{\"payload\":1,\"depends_on\":[\"%s\"]}", ref);
        const char *els[] = {el0, el1};
        struct batch b;
        int r = batch_of(els, 2, &b);
        if (extra == 0) {
            CHECK_INT(r, 0);
            CHECK_INT(b.specs[1].deps[0].id, 0);
            CHECK_INT(b.specs[1].deps[0].index, 0);
        } else {
            CHECK_INT(r, -1);
            CHECK(strstr(b.msg, "jobs[0].ref must be 1 to 200 bytes") != NULL);
        }
        batch_done(&b);
        ref[JOB_REF_MAX + extra] = 'r';
    }
}

TEST(batch_refs_resolve_to_indices)
{
    /* A diamond given children first, with ids mixed in and a repeated ref. */
    const char *els[] = {
        "{\"payload\":1,\"ref\":\"end\",\"depends_on\":[\"left\",\"right\",\"left\"],"
        "\"on_dependency_failure\":\"run\"}",
        "{\"payload\":1,\"ref\":\"left\",\"depends_on\":[\"top\",42]}",
        "{\"payload\":1,\"ref\":\"right\",\"depends_on\":[\"top\"]}",
        "{\"payload\":1,\"ref\":\"top\"}",
        "{\"payload\":1,\"depends_on\":[42,42]}",
    };
    struct batch b;
    CHECK_INT(batch_of(els, 5, &b), 0);
    CHECK_INT(b.specs[0].ndeps, 2);
    CHECK_INT(b.specs[0].deps[0].id, 0);
    CHECK_INT(b.specs[0].deps[0].index, 1);
    CHECK_INT(b.specs[0].deps[1].id, 0);
    CHECK_INT(b.specs[0].deps[1].index, 2);
    CHECK_INT(b.specs[0].on_dependency_failure, DEP_RUN);
    CHECK_INT(b.specs[1].ndeps, 2);
    CHECK_INT(b.specs[1].deps[0].index, 3);
    CHECK_INT(b.specs[1].deps[1].id, 42);
    CHECK_INT(b.specs[2].deps[0].index, 3);
    CHECK_INT(b.specs[3].ndeps, 0);
    CHECK_INT(b.specs[4].ndeps, 1);
    CHECK_INT(b.specs[4].deps[0].id, 42);
    batch_done(&b);
}

TEST(batch_refusals_name_the_element)
{
    struct {
        const char *els[4];
        size_t n;
        const char *want;
    } bad[] = {
        {{"{\"payload\":1,\"ref\":\"a\"}", "{\"payload\":1,\"depends_on\":[\"a\",\"x\"]}"},
         2,
         "jobs[1].depends_on[1]: no element of the batch has ref \"x\""},
        {{"{\"payload\":1,\"ref\":\"a\"}", "{\"payload\":1,\"ref\":\"b\"}",
          "{\"payload\":1,\"ref\":\"a\"}"},
         3,
         "jobs[2].ref: \"a\" is also jobs[0].ref"},
        {{"{\"payload\":1}", "{\"payload\":1,\"ref\":\"s\",\"depends_on\":[\"s\"]}"},
         2,
         "jobs[1].depends_on: a cycle"},
        {{"{\"payload\":1,\"ref\":\"a\",\"depends_on\":[\"c\"]}",
          "{\"payload\":1,\"ref\":\"b\",\"depends_on\":[\"a\"]}",
          "{\"payload\":1,\"ref\":\"c\",\"depends_on\":[\"b\"]}", "{\"payload\":1}"},
         3,
         "depends_on: a cycle"},
        {{"{\"payload\":1}", "{\"payload\":1,\"ref\":7}"}, 2, "jobs[1].ref must be a string"},
        {{"{\"payload\":1,\"ref\":\"\"}"}, 1, "jobs[0].ref must be 1 to 200 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct batch b;
        int r = batch_of(bad[i].els, bad[i].n, &b);
        if (r == 0 || !strstr(b.msg, bad[i].want))
            fprintf(stderr, "case %zu: r=%d msg \"%s\", want \"%s\"\n", i, r, b.msg, bad[i].want);
        CHECK_INT(r, -1);
        CHECK(strstr(b.msg, bad[i].want) != NULL);
        batch_done(&b);
    }
    /* A long ref is shown cut, on a character boundary. */
    char el[400], ref[240] = "";
    for (int k = 0; k < 60; k++)
        strcat(ref, "\xc3\xa9"); /* é, 2 bytes: 120 bytes */
    snprintf(el, sizeof el, "{\"payload\":1,\"depends_on\":[\"%s\"]}", ref);
    const char *els[] = {el};
    struct batch b;
    CHECK_INT(batch_of(els, 1, &b), -1);
    CHECK(strstr(b.msg, "jobs[0].depends_on[0]: no element of the batch has ref \"") != NULL);
    CHECK(strstr(b.msg, "\xc3\xa9...\"") != NULL);
    batch_done(&b);
}

TEST_MAIN(TEST_ENTRY(ids_modes_and_defaults), TEST_ENTRY(single_refusals_name_the_field),
          TEST_ENTRY(limits_at_the_edge), TEST_ENTRY(batch_refs_resolve_to_indices),
          TEST_ENTRY(batch_refusals_name_the_element))
