#include "testlib.h"

#include <limits.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>

int test_failed;

static jmp_buf skip_jump;    /* where test_skip() leaves the running case */
static const char *skip_why; /* set when the running case was skipped */
static void (*deferred[TEST_DEFER_MAX])(void);
static int ndeferred;

_Noreturn void test_skip(const char *why)
{
    skip_why = why ? why : "";
    longjmp(skip_jump, 1);
}

void test_defer(void (*fn)(void))
{
    if (ndeferred == TEST_DEFER_MAX) {
        fprintf(stderr, "test_defer: more than %d deferred functions\n", TEST_DEFER_MAX);
        test_failed = 1;
        fn();
        return;
    }
    deferred[ndeferred++] = fn;
}

static int remove_tree(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

/* Run case c in a new temp dir. Returns 0 (passed), 1 (failed) or 2 (skipped). */
static int run_one(const struct test_case *c)
{
    char dir[] = "/tmp/jobq-test-XXXXXX";
    char old[PATH_MAX];
    if (!mkdtemp(dir) || !getcwd(old, sizeof old) || chdir(dir) != 0) {
        fprintf(stderr, "%s: cannot make a temp dir\n", c->name);
        return 1;
    }
    test_failed = 0;
    skip_why = NULL;
    ndeferred = 0;
    if (setjmp(skip_jump) == 0)
        c->fn();
    while (ndeferred > 0)
        deferred[--ndeferred]();
    int failed = test_failed;
    if (chdir(old) != 0)
        failed = 1;
    if (!failed)
        remove_tree(dir);
    else
        fprintf(stderr, "%s: left its files in %s\n", c->name, dir);
    if (skip_why && !failed) {
        printf("skip %s: %s\n", c->name, skip_why);
        return 2;
    }
    printf("%s %s\n", failed ? "FAIL" : "ok  ", c->name);
    return failed;
}

int test_run(int argc, char **argv, const struct test_case *cases, size_t n)
{
    int passed = 0, failed = 0, skipped = 0;
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        int wanted = argc <= 1;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (!wanted)
            continue;
        int r = run_one(&cases[i]);
        passed += r == 0;
        failed += r == 1;
        skipped += r == 2;
    }
    if (passed + failed + skipped == 0) {
        fprintf(stderr, "no test case matched\n");
        return 2;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : passed ? 0 : TEST_SKIPPED;
}
