/* A tiny unit-test harness. A test file declares its cases with TEST(name) and ends with
 * TEST_MAIN(case, case, ...). Each case runs in a fresh temporary directory (the current
 * directory while it runs), alone when its name is given on the command line, and the run
 * ends with the line "N passed, N failed, N skipped". CMake registers every TEST(name) as its
 * own ctest test by reading the file. */
#ifndef JOBQ_TESTLIB_H
#define JOBQ_TESTLIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct test_case {
    const char *name;
    void (*fn)(void);
};

/* Set by the CHECK macros when the running case fails. */
extern int test_failed;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            test_failed = 1;                                                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ != vb_) {                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
                    #a, #b, va_, vb_);                                                             \
            test_failed = 1;                                                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *sa_ = (a), *sb_ = (b);                                                         \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" != \"%s\")\n", __FILE__,        \
                    __LINE__, #a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");                 \
            test_failed = 1;                                                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* End the running case here as skipped, printing why; it counts as not failed. It does not
 * return (it jumps back to the harness): call it only while the case holds nothing to free.
 * A run whose cases were all skipped exits TEST_SKIPPED (ctest's SKIP_RETURN_CODE). */
_Noreturn void test_skip(const char *why);

#define TEST_SKIPPED 77

/* Run fn once the running case ends (passed, failed or skipped), in its temp dir; deferred
 * functions run in reverse order of deferral. At most TEST_DEFER_MAX per case: past that,
 * fn runs at once and the case fails. */
void test_defer(void (*fn)(void));

#define TEST_DEFER_MAX 8

/* Run the cases named in argv (all when none), each in its own temp dir. Returns the exit
 * status: 0 when every case ran and none failed, TEST_SKIPPED when all were skipped. */
int test_run(int argc, char **argv, const struct test_case *cases, size_t n);

#define TEST_ENTRY(fn)                                                                             \
    {                                                                                              \
#fn, fn                                                                                    \
    }
#define TEST_MAIN(...)                                                                             \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const struct test_case cases_[] = {__VA_ARGS__};                                    \
        return test_run(argc, argv, cases_, sizeof cases_ / sizeof cases_[0]);                     \
    }

#endif
