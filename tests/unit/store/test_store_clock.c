/* The time a write is decided at (store.h: struct store_call's at_clock), on SQLite and on
 * PostgreSQL (test_store_util.h). A call made at the clock, as every request's is, is decided
 * at the store's clock when it runs, not at the now it was made with: a claim that waited
 * (for the writer, a connection, a key's lock) takes no job that expired meanwhile, dates
 * claimed_at and its lease from when it ran and counts in that second's rate window; a lease
 * call checks the lease at that time. The late calls here are made with a now OLD seconds
 * behind the clock, as a call that waited that long keeps it; the store's clock is the real
 * one (on PostgreSQL the database's, this host's to within the skew it measures). And a
 * claim decided at a now older than the newest second its key counts a claim in counts in
 * that second (limit_claim_second), so that no rate window admits more than its limit.
 * store_clock_now() turns this process's clock into the store's without a round trip (the
 * SQS listener checks a SigV4 date with it). */
#include "clock.h"
#include "test_store_util.h"

#define OLD 100 /* seconds a late call's now is behind the clock */

/* Claim at most max jobs of queue at now (at_clock: decided at the store's clock) into out;
 * *n is how many. */
static enum store_result claim_call(struct store *s, const char *queue, int max, int64_t now,
                                    int at_clock, struct job *out, size_t *n)
{
    const char *queues[1] = {queue};
    struct claim_req req = {"worker-1", queues, 1, NULL, 30, max};
    struct store_call call = {.kind = STORE_CALL_CLAIM,
                              .now = now,
                              .at_clock = at_clock,
                              .claim = {.req = &req, .out = out}};
    enum store_result r = store_call_run(s, &call);
    *n = call.claim.n;
    return r;
}

/* Enqueue one job of queue due at run_at with concurrency key ckey (NULL: none) that expires
 * at expires_at (0: never), at now; its id, or -1. */
static int64_t enqueue_at(struct store *s, const char *queue, const char *ckey, int64_t run_at,
                          int64_t expires_at, int64_t now)
{
    struct job_spec sp = spec_of(queue, 0, run_at);
    sp.concurrency_key = ckey;
    sp.expires_at = expires_at;
    return enqueue_spec(s, &sp, now);
}

/* Put a limit of jobs claims per `per` seconds on key at now. */
static enum store_result put_rate(struct store *s, const char *key, int64_t jobs, int64_t per,
                                  int64_t now)
{
    struct limit out, l = {.rate_jobs = jobs, .rate_per_seconds = per};
    snprintf(l.key, sizeof l.key, "%s", key);
    return store_limit_put(s, &l, now, &out);
}

TEST(a_late_claim_is_dated_when_it_runs)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = clock_now();
    int64_t id = enqueue_at(s, "q", NULL, t - OLD, 0, t - OLD);
    CHECK(id > 0);
    struct job out;
    size_t n = 0;
    CHECK_INT(claim_call(s, "q", 1, t - OLD, 1, &out, &n), STORE_OK);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(out.id, id);
        CHECK(out.claimed_at >= t - 1 && out.claimed_at <= clock_now() + 1);
        CHECK_INT(out.heartbeat_at, out.claimed_at);
        CHECK_INT(out.lease_expires_at, out.claimed_at + 30);
        job_clear(&out);
    }
    store_close(s);
}

TEST(a_late_claim_takes_no_job_that_expired_meanwhile)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = clock_now();
    int64_t id = enqueue_at(s, "q", NULL, t - OLD, t - OLD / 2, t - OLD);
    CHECK(id > 0);
    struct job out;
    size_t n = 9;
    /* Made before the job expired, run after. */
    CHECK_INT(claim_call(s, "q", 1, t - OLD, 1, &out, &n), STORE_OK);
    CHECK_INT(n, 0);
    /* The same now without at_clock is the time it is decided at: the job was not expired. */
    CHECK_INT(claim_call(s, "q", 1, t - OLD, 0, &out, &n), STORE_OK);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(out.id, id);
        CHECK_INT(out.claimed_at, t - OLD);
        job_clear(&out);
    }
    store_close(s);
}

/* A late claim of a rate-limited key counts in the window of the second it ran in: a claim
 * right after it finds that window holding it. Decided at its own now, its claim would count
 * in a second long gone and the next claim would find the whole rate free. */
TEST(a_late_claim_counts_in_the_window_it_ran_in)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = clock_now();
    CHECK_INT(put_rate(s, "k", 2, 60, t - OLD), STORE_OK);
    for (int i = 0; i < 3; i++)
        CHECK(enqueue_at(s, "r", "k", t - OLD, 0, t - OLD) > 0);
    struct job out[2];
    size_t late = 0, next = 0;
    CHECK_INT(claim_call(s, "r", 1, t - OLD, 1, out, &late), STORE_OK);
    for (size_t i = 0; i < late; i++)
        job_clear(&out[i]);
    CHECK_INT(claim_call(s, "r", 2, clock_now(), 1, out, &next), STORE_OK);
    for (size_t i = 0; i < next; i++)
        job_clear(&out[i]);
    CHECK_INT(late, 1);
    CHECK_INT(late + next, 2); /* 2 per 60 s, all of them within a second or two */
    store_close(s);
}

/* Time as given (no at_clock), as a process whose clock reads behind another's: a claim at a
 * now before the key's newest claim counts in that newest second, so the window a later claim
 * prunes to still holds it. Counted at its own now (a second the claim at T0 + 20 passed by),
 * the rate would admit a third claim within 10 s. */
TEST(a_claim_behind_the_newest_counts_in_the_newest_second)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(put_rate(s, "k", 2, 10, T0), STORE_OK);
    for (int i = 0; i < 3; i++)
        CHECK(enqueue_at(s, "r", "k", T0, 0, T0) > 0);
    const int64_t at[3] = {T0 + 20, T0, T0 + 20};
    size_t total = 0;
    for (int i = 0; i < 3; i++) {
        struct job out;
        size_t n = 0;
        CHECK_INT(claim_call(s, "r", 1, at[i], 0, &out, &n), STORE_OK);
        if (n == 1) {
            CHECK_INT(out.claimed_at, at[i]); /* the job is still dated at the claim's now */
            job_clear(&out);
        }
        total += n;
    }
    CHECK_INT(total, 2);
    store_close(s);
}

/* A heartbeat or a complete made while the lease was live, run after it ended, finds it
 * ended (409 lease_lost), even before any sweep. */
TEST(a_late_lease_call_finds_the_lease_ended)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = clock_now();
    CHECK(enqueue_at(s, "q", NULL, t - OLD, 0, t - OLD) > 0);
    struct job claimed, out;
    size_t n = 0;
    CHECK_INT(claim_call(s, "q", 1, t - OLD, 0, &claimed, &n), STORE_OK);
    CHECK_INT(n, 1);
    if (n != 1)
        return;
    CHECK_INT(claimed.lease_expires_at, t - OLD + 30);
    struct store_call hb = {
        .kind = STORE_CALL_HEARTBEAT,
        .now = t - OLD + 1,
        .at_clock = 1,
        .heartbeat = {
            .id = claimed.id, .token = claimed.lease_token, .lease_seconds = 30, .out = &out}};
    CHECK_INT(store_call_run(s, &hb), STORE_LEASE_LOST);
    struct store_call done = {
        .kind = STORE_CALL_COMPLETE,
        .now = t - OLD + 1,
        .at_clock = 1,
        .complete = {.id = claimed.id, .token = claimed.lease_token, .out = &out}};
    CHECK_INT(store_call_run(s, &done), STORE_LEASE_LOST);
    /* Decided at the now it was made with, the lease was live. */
    done.at_clock = 0;
    CHECK_INT(store_call_run(s, &done), STORE_OK);
    job_clear(&out);
    job_clear(&claimed);
    store_close(s);
}

TEST(store_clock_now_is_the_stores_clock)
{
    /* This process's clock an hour behind the real one (the database's on PostgreSQL). */
    int64_t real = clock_now();
    clock_set_fake(real - 3600);
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = store_clock_now(s, clock_now());
    if (backend_pg())
        CHECK(t >= real - 2 && t <= real + 5); /* the skew measured at connect */
    else
        CHECK_INT(t, real - 3600); /* one process owns the file: its clock is the store's */
    store_close(s);
    clock_set_fake(-1);
}

TEST_MAIN(TEST_ENTRY(a_late_claim_is_dated_when_it_runs),
          TEST_ENTRY(a_late_claim_takes_no_job_that_expired_meanwhile),
          TEST_ENTRY(a_late_claim_counts_in_the_window_it_ran_in),
          TEST_ENTRY(a_claim_behind_the_newest_counts_in_the_newest_second),
          TEST_ENTRY(a_late_lease_call_finds_the_lease_ended),
          TEST_ENTRY(store_clock_now_is_the_stores_clock))
