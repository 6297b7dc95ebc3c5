/* Job expiry (server/domain/expiry.h): the check of expires_at and expires_in_seconds, the
 * deadline on the store's clock, and the instant a job expires. */
#include "expiry.h"
#include "testlib.h"

TEST(check_names_the_field)
{
    CHECK(expiry_check(JOB_NONE, JOB_NONE, 1000) == NULL);
    CHECK(expiry_check(1001, JOB_NONE, 1000) == NULL);
    CHECK(expiry_check(JOB_RUN_AT_MAX, JOB_NONE, 1000) == NULL);
    CHECK(expiry_check(JOB_NONE, 1, 1000) == NULL);
    CHECK(expiry_check(JOB_NONE, EXPIRY_IN_MAX, 1000) == NULL);
    CHECK_STR(expiry_check(2000, 60, 1000), "expires_at and expires_in_seconds");
    CHECK_STR(expiry_check(1000, JOB_NONE, 1000), "expires_at"); /* now is the past */
    CHECK_STR(expiry_check(999, JOB_NONE, 1000), "expires_at");
    CHECK_STR(expiry_check(-1, JOB_NONE, 1000), "expires_at");
    CHECK_STR(expiry_check(JOB_RUN_AT_MAX + 1, JOB_NONE, 1000), "expires_at");
    CHECK_STR(expiry_check(JOB_NONE, 0, 1000), "expires_in_seconds");
    CHECK_STR(expiry_check(JOB_NONE, -1, 1000), "expires_in_seconds");
    CHECK_STR(expiry_check(JOB_NONE, EXPIRY_IN_MAX + 1, 1000), "expires_in_seconds");
}

TEST(resolved_on_the_stores_clock)
{
    CHECK_INT(expiry_resolve(5000, JOB_NONE, 1000), 5000);
    CHECK_INT(expiry_resolve(JOB_NONE, 60, 1000), 1060);
    CHECK_INT(expiry_resolve(JOB_NONE, 60, 1003), 1063);
    CHECK_INT(expiry_resolve(JOB_NONE, JOB_NONE, 1000), JOB_NONE);
}

TEST(expired_from_expires_at_itself)
{
    CHECK_INT(expiry_passed(JOB_NONE, 1000), 0);
    CHECK_INT(expiry_passed(JOB_NONE, INT64_MAX), 0);
    CHECK_INT(expiry_passed(1000, 999), 0);
    CHECK_INT(expiry_passed(1000, 1000), 1);
    CHECK_INT(expiry_passed(1000, 1001), 1);
    /* expires_in_seconds 1 at 1000: claimable at 1000 only. */
    int64_t at = expiry_resolve(JOB_NONE, 1, 1000);
    CHECK_INT(expiry_passed(at, 1000), 0);
    CHECK_INT(expiry_passed(at, 1001), 1);
}

TEST_MAIN(TEST_ENTRY(check_names_the_field), TEST_ENTRY(resolved_on_the_stores_clock),
          TEST_ENTRY(expired_from_expires_at_itself))
