#include "testlib.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

int test_failed;

static int remove_tree(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static int run_one(const struct test_case *c)
{
    char dir[] = "/tmp/jobq-test-XXXXXX";
    char old[PATH_MAX];
    if (!mkdtemp(dir) || !getcwd(old, sizeof old) || chdir(dir) != 0) {
        fprintf(stderr, "%s: cannot make a temp dir\n", c->name);
        return 1;
    }
    test_failed = 0;
    c->fn();
    int failed = test_failed;
    if (chdir(old) != 0)
        failed = 1;
    if (!failed)
        remove_tree(dir);
    else
        fprintf(stderr, "%s: left its files in %s\n", c->name, dir);
    printf("%s %s\n", failed ? "FAIL" : "ok  ", c->name);
    return failed;
}

int test_run(int argc, char **argv, const struct test_case *cases, size_t n)
{
    int passed = 0, failed = 0;
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
        if (run_one(&cases[i]))
            failed++;
        else
            passed++;
    }
    if (passed + failed == 0) {
        fprintf(stderr, "no test case matched\n");
        return 2;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
