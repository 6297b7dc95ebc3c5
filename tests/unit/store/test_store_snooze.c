/* store_snooze (job_snooze_plan, lease.h): back to queued after `seconds` without spending an
 * attempt, the claim kept in fencing_token and recorded as "snoozed", the lease rules of a
 * fail, and pause_key (the key's paused_until and its lanes' open_at, merged, never
 * shortened). On SQLite and on PostgreSQL (test_store_util.h). */
#include "test_store_util.h"

/* The name of a flow-control table on the backend under test. */
static const char *table(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", backend_pg() ? "jobq_" : "", name);
    return buf;
}

/* Enqueue one job of queue "q" (with concurrency key ckey, or none) at T0 and claim it at T0
 * with a 30 s lease; its id with its token in token, or -1. */
static int64_t running(struct store *s, const char *ckey, char token[JOB_TOKEN_LEN + 1])
{
    struct job_spec sp = spec_of("q", 0, T0);
    sp.concurrency_key = ckey;
    int64_t id = enqueue_spec(s, &sp, T0);
    struct job j;
    if (id < 0 || claim_one(s, "q", T0, &j) != id)
        return -1;
    snprintf(token, JOB_TOKEN_LEN + 1, "%s", j.lease_token);
    job_clear(&j);
    return id;
}

/* The start of a case: the store s and one running job id (its token in token) without a
 * concurrency key. */
#define OPEN_WITH_A_RUNNING_JOB()                                                                  \
    struct store *s = open_store();                                                                \
    CHECK(s != NULL);                                                                              \
    char token[JOB_TOKEN_LEN + 1];                                                                 \
    int64_t id = running(s, NULL, token);                                                          \
    CHECK(id > 0);                                                                                 \
    struct job j

TEST(snooze_requeues_without_spending_an_attempt)
{
    OPEN_WITH_A_RUNNING_JOB();
    CHECK_INT(store_snooze(s, id, token, 60, 0, T0 + 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_INT(j.run_at, T0 + 61);
    CHECK_INT(j.attempts, 0);
    CHECK_INT(j.fencing_token, 1);
    CHECK(j.lease_token == NULL);
    CHECK(j.lease_expires_at == JOB_NONE);
    CHECK(j.error_code == NULL);
    job_clear(&j);
    CHECK(counts_exact(s, "q", T0 + 1));
    CHECK_INT(claim_one(s, "q", T0 + 60, &j), 0); /* not due yet */
    CHECK_INT(claim_one(s, "q", T0 + 61, &j), id);
    CHECK_INT(j.attempts, 1); /* the snoozed claim was not counted */
    CHECK_INT(j.fencing_token, 2);
    job_clear(&j);
    struct job_attempt *a = NULL;
    size_t n = 0;
    CHECK_INT(store_attempts(s, id, &a, &n), STORE_OK);
    CHECK_INT(n, 2);
    CHECK_INT(a[0].outcome, ATTEMPT_SNOOZED);
    CHECK_INT(a[0].attempt, 1);
    CHECK_INT(a[0].ended_at, T0 + 1);
    CHECK(a[0].error_code == NULL);
    CHECK_INT(a[1].outcome, ATTEMPT_RUNNING);
    CHECK_INT(a[1].attempt, 1);
    job_attempts_free(a, n);
    CHECK(counts_exact(s, "q", T0 + 61));
    store_close(s);
}

TEST(snooze_zero_is_claimable_at_once)
{
    OPEN_WITH_A_RUNNING_JOB();
    CHECK_INT(store_snooze(s, id, token, 0, 1, T0 + 5, &j), STORE_OK);
    CHECK_INT(j.run_at, T0 + 5);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0 + 5, &j), id);
    job_clear(&j);
    CHECK(counts_exact(s, "q", T0 + 5));
    store_close(s);
}

TEST(snooze_needs_the_live_lease)
{
    OPEN_WITH_A_RUNNING_JOB();
    CHECK_INT(store_snooze(s, id + 100, token, 10, 0, T0 + 1, &j), STORE_NOT_FOUND);
    CHECK_INT(store_snooze(s, id, "00000000000000000000000000000000", 10, 0, T0 + 1, &j),
              STORE_LEASE_LOST);
    /* The lease ends at T0 + 30: at that second it is no longer live. */
    CHECK_INT(store_snooze(s, id, token, 10, 0, T0 + 30, &j), STORE_LEASE_LOST);
    CHECK_INT(status_of(s, id), JOB_RUNNING);
    /* A snoozed job's token is stale; so is a completed job's. */
    CHECK_INT(store_snooze(s, id, token, 0, 0, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_snooze(s, id, token, 0, 0, T0 + 2, &j), STORE_LEASE_LOST);
    CHECK_INT(claim_one(s, "q", T0 + 3, &j), id);
    snprintf(token, sizeof token, "%s", j.lease_token);
    job_clear(&j);
    CHECK_INT(store_complete(s, id, token, NULL, T0 + 4, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_snooze(s, id, token, 0, 0, T0 + 5, &j), STORE_LEASE_LOST);
    CHECK_INT(status_of(s, id), JOB_SUCCEEDED);
    CHECK(counts_exact(s, "q", T0 + 5));
    store_close(s);
}

TEST(snooze_pause_key_pauses_the_key_and_its_lanes)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    char t[32], sql[256];
    /* Lanes of the key (and one of another key), as the claim keeps them. */
    snprintf(sql, sizeof sql,
             "INSERT INTO %s (queue, requires, ckey, check_at, open_at) VALUES "
             "('q', '', 'k', 0, 0), ('r', '[\"gpu\"]', 'k', 0, %lld), ('q', '', 'other', 0, 0)",
             table("lanes", t, sizeof t), (long long)(T0 + 500));
    CHECK_INT(store_sql(sql), 0);
    char token[JOB_TOKEN_LEN + 1], token2[JOB_TOKEN_LEN + 1];
    int64_t id = running(s, "k", token);
    int64_t id2 = running(s, "k", token2);
    CHECK(id > 0 && id2 > 0);
    struct job j;
    CHECK_INT(store_snooze(s, id, token, 100, 1, T0 + 1, &j), STORE_OK);
    CHECK_STR(j.concurrency_key, "k");
    job_clear(&j);
    CHECK_INT(table_int("paused_until", "keys", "key = 'k'"), T0 + 101);
    CHECK_INT(table_int("open_at", "lanes", "queue = 'q' AND ckey = 'k'"), T0 + 101);
    CHECK_INT(table_int("open_at", "lanes", "queue = 'r' AND ckey = 'k'"), T0 + 500); /* later */
    CHECK_INT(table_int("open_at", "lanes", "ckey = 'other'"), 0);
    /* A shorter pause of the key never shortens the one it holds. */
    CHECK_INT(store_snooze(s, id2, token2, 5, 1, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(table_int("paused_until", "keys", "key = 'k'"), T0 + 101);
    CHECK_INT(table_int("open_at", "lanes", "queue = 'q' AND ckey = 'k'"), T0 + 101);
    /* A longer one lengthens it. */
    CHECK_INT(claim_one(s, "q", T0 + 101, &j), id2);
    snprintf(token2, sizeof token2, "%s", j.lease_token);
    job_clear(&j);
    CHECK_INT(store_snooze(s, id2, token2, 1000, 1, T0 + 102, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(table_int("paused_until", "keys", "key = 'k'"), T0 + 1102);
    CHECK_INT(table_int("open_at", "lanes", "queue = 'q' AND ckey = 'k'"), T0 + 1102);
    CHECK(counts_exact(s, "q", T0 + 102));
    store_close(s);
}

TEST(snooze_without_pause_key_or_key_pauses_nothing)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    char token[JOB_TOKEN_LEN + 1];
    int64_t keyed = running(s, "k", token);
    CHECK(keyed > 0);
    struct job j;
    CHECK_INT(store_snooze(s, keyed, token, 100, 0, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    int64_t plain = running(s, NULL, token);
    CHECK(plain > 0);
    CHECK_INT(store_snooze(s, plain, token, 100, 1, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(table_int("count(*)", "keys", "1 = 1"), 0);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(snooze_requeues_without_spending_an_attempt),
          TEST_ENTRY(snooze_zero_is_claimable_at_once), TEST_ENTRY(snooze_needs_the_live_lease),
          TEST_ENTRY(snooze_pause_key_pauses_the_key_and_its_lanes),
          TEST_ENTRY(snooze_without_pause_key_or_key_pauses_nothing))
