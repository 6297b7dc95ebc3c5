/* Webhook subscriptions in the store (store_webhook.h), on SQLite and on PostgreSQL
 * (test_store_util.h): a put creates (with the fresh secret when none is given, after the
 * newest event) or replaces (keeping the delivery state; a new secret keeps the old one for
 * the rotation window); the count is bounded; the delivery lease is one holder at a time, by
 * compare and swap, re-checked (token and deadline) by the write that ends it; a subscription
 * that is disabled or not yet due is not leased; a delete removes it. Times are ahead of the
 * clock, so the lease and done writes (decided at the store's clock, never earlier than the
 * caller's now) are decided at the times given. */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "store_webhook.h"
#include "test_store_util.h"
#include "webhook.h"

#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define FRESH "whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"

static struct store_webhook sub(const char *name, const char *secret)
{
    struct store_webhook w = {.url = "http://hooks.example.com/in",
                              .secret = (char *)secret,
                              .enabled = 1,
                              .types = 1u << 5,
                              .queues = "a,b"};
    snprintf(w.name, sizeof w.name, "%s", name);
    return w;
}

static enum store_result put(struct store *s, const char *name, const char *secret, int64_t now,
                             struct store_webhook *out, int *created)
{
    struct store_webhook in = sub(name, secret);
    return store_webhook_put(s, &in, FRESH, now, out, created);
}

/* A store with subscription "ops" (SECRET_A) made at t and leased by "tok-a" for 60 s at t
 * (the row as leased in *w); NULL when any of it fails. */
static struct store *open_leased(int64_t t, struct store_webhook *w)
{
    struct store *s = open_store();
    int created = 0;
    int64_t now = t;
    if (s && (put(s, "ops", SECRET_A, t, w, &created) != STORE_OK ||
              store_webhook_lease(s, "ops", "tok-a", 60, &now, w) != STORE_OK)) {
        store_close(s);
        return NULL;
    }
    return s;
}

TEST(put_creates_then_replaces)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = clock_now() + 1000;
    CHECK(enqueue(s, "a", 0, t, t) > 0); /* an event before the subscription */
    struct store_webhook out = {0};
    int created = 0;
    CHECK_INT(put(s, "ops", NULL, t, &out, &created), STORE_OK);
    CHECK_INT(created, 1);
    CHECK_STR(out.secret, FRESH);
    CHECK(out.prev_secret == NULL);
    CHECK(out.delivered_seq > 0); /* after the newest event */
    CHECK_STR(out.queues, "a,b");
    CHECK_INT(out.types, 1u << 5);
    CHECK(out.enabled && !out.ordered);
    CHECK_INT(out.failing_since, JOB_NONE);
    CHECK(out.lease_token == NULL);
    int64_t seq = out.delivered_seq;
    /* A replace without a secret keeps it; with the same one, no rotation either. */
    CHECK_INT(put(s, "ops", NULL, t + 1, &out, &created), STORE_OK);
    CHECK_INT(created, 0);
    CHECK_STR(out.secret, FRESH);
    CHECK_INT(out.delivered_seq, seq);
    CHECK_INT(put(s, "ops", FRESH, t + 2, &out, &created), STORE_OK);
    CHECK(out.prev_secret == NULL);
    /* A new secret: the old one signs too for the rotation window. */
    CHECK_INT(put(s, "ops", SECRET_A, t + 3, &out, &created), STORE_OK);
    CHECK_STR(out.secret, SECRET_A);
    CHECK_STR(out.prev_secret, FRESH);
    CHECK_INT(out.prev_until, t + 3 + WEBHOOK_ROTATE_SECONDS);
    CHECK_INT(out.created_at, t);
    CHECK_INT(out.updated_at, t + 3);
    store_webhook_clear(&out);
    struct store_webhook *all = NULL;
    size_t n = 0;
    CHECK_INT(store_webhooks(s, "ops", &all, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_STR(all[0].secret, SECRET_A);
    store_webhooks_free(all, n);
    CHECK_INT(store_webhooks(s, "none", &all, &n), STORE_NOT_FOUND);
    store_close(s);
}

TEST(count_is_bounded)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t t = clock_now() + 1000;
    struct store_webhook out = {0};
    int created = 0;
    char name[32];
    for (int i = 0; i < STORE_WEBHOOKS_MAX; i++) {
        snprintf(name, sizeof name, "w%03d", i);
        CHECK_INT(put(s, name, SECRET_A, t, &out, &created), STORE_OK);
    }
    CHECK_INT(put(s, "one-more", SECRET_A, t, &out, &created), STORE_CONFLICT);
    CHECK_INT(put(s, "w007", SECRET_B, t, &out, &created), STORE_OK); /* a replace still is */
    struct store_webhook *all = NULL;
    size_t n = 0;
    CHECK_INT(store_webhooks(s, NULL, &all, &n), STORE_OK);
    CHECK_INT(n, STORE_WEBHOOKS_MAX);
    CHECK_STR(all[0].name, "w000");
    store_webhooks_free(all, n);
    store_webhook_clear(&out);
    store_close(s);
}

TEST(lease_is_one_holder_and_rechecked)
{
    int64_t t = clock_now() + 1000, now = t;
    struct store_webhook w = {0}, out = {0};
    struct store *s = open_leased(t, &w);
    CHECK(s != NULL);
    CHECK_STR(w.lease_token, "tok-a");
    CHECK_INT(w.lease_until, t + 60);
    now = t + 1;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-b", 60, &now, &out), STORE_CONFLICT);
    /* b never held it: its end is refused; a's is written and ends the lease. */
    struct store_webhook next = w;
    next.delivered_seq = w.delivered_seq + 7;
    next.deliveries = 1;
    CHECK_INT(store_webhook_done(s, "ops", "tok-b", &next, NULL, 0, t + 2, &out), STORE_LEASE_LOST);
    CHECK_INT(store_webhook_done(s, "ops", "tok-a", &next, NULL, 0, t + 2, &out), STORE_OK);
    CHECK_INT(out.delivered_seq, w.delivered_seq + 7);
    CHECK_INT(out.deliveries, 1);
    CHECK(out.lease_token == NULL);
    CHECK_INT(out.lease_until, JOB_NONE);
    /* A lease that ran out is taken over, and its holder's end is refused. */
    now = t + 3;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-c", 60, &now, &out), STORE_OK);
    now = t + 63;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-d", 60, &now, &out), STORE_OK);
    CHECK_INT(store_webhook_done(s, "ops", "tok-c", &next, NULL, 0, t + 64, &out),
              STORE_LEASE_LOST);
    CHECK_STR(out.lease_token == NULL ? "" : "kept", ""); /* out untouched when refused */
    /* A lease past its deadline cannot write either, even with no one else holding it. */
    CHECK_INT(store_webhook_done(s, "ops", "tok-d", &next, NULL, 0, t + 123, &out),
              STORE_LEASE_LOST);
    store_webhook_clear(&w);
    store_webhook_clear(&out);
    store_close(s);
}

TEST(not_due_or_disabled_is_not_leased)
{
    int64_t t = clock_now() + 1000, now = t;
    struct store_webhook w = {0}, out = {0};
    int created = 0;
    struct store *s = open_leased(t, &w);
    CHECK(s != NULL);
    struct store_webhook next = w;
    next.failing_since = t;
    next.attempts = 1;
    next.failures = 1;
    next.last_status = 500;
    next.last_error = "HTTP 500";
    next.next_attempt_at = t + 100;
    CHECK_INT(store_webhook_done(s, "ops", "tok-a", &next, NULL, 0, t + 1, &out), STORE_OK);
    CHECK_STR(out.last_error, "HTTP 500");
    now = t + 99;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-b", 60, &now, &out), STORE_CONFLICT);
    now = t + 100;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-b", 60, &now, &out), STORE_OK);
    /* 410: disabled, with its reason; then not leased until a put enables it again. */
    next = out;
    next.enabled = 0;
    next.disabled_reason = "the receiver answered 410 Gone";
    CHECK_INT(store_webhook_done(s, "ops", "tok-b", &next, NULL, 0, t + 101, &w), STORE_OK);
    CHECK(!w.enabled);
    CHECK_STR(w.disabled_reason, "the receiver answered 410 Gone");
    now = t + 200;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-c", 60, &now, &out), STORE_CONFLICT);
    CHECK_INT(put(s, "ops", NULL, t + 201, &w, &created), STORE_OK);
    CHECK(w.enabled && w.disabled_reason == NULL);
    CHECK_INT(w.failing_since, JOB_NONE);
    CHECK_INT(w.next_attempt_at, JOB_NONE);
    CHECK_INT(w.failures, 1); /* the counts stay */
    now = t + 202;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-c", 60, &now, &out), STORE_OK);
    store_webhook_clear(&w);
    store_webhook_clear(&out);
    store_close(s);
}

TEST(parked_events_are_kept_for_the_holder)
{
    int64_t t = clock_now() + 1000, now = t;
    struct store_webhook w = {0}, out = {0};
    int created = 0;
    struct store *s = open_leased(t, &w);
    CHECK(s != NULL);
    CHECK_INT(w.nparked, 0);
    struct store_webhook next = w;
    next.retry_at = t + 30;
    struct store_webhook_parked p1 = {
        .seq = 11, .job_id = 5, .attempts = 1, .failing_since = t, .next_attempt_at = t + 30};
    CHECK_INT(store_webhook_done(s, "ops", "tok-a", &next, &p1, 0, t + 1, &out), STORE_OK);
    CHECK_INT(out.retry_at, t + 30);
    now = t + 2;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-b", 60, &now, &w), STORE_OK);
    struct store_webhook_parked p2 = {
        .seq = 12, .job_id = 5, .failing_since = JOB_NONE, .next_attempt_at = JOB_NONE};
    CHECK_INT(w.nparked, 1);
    CHECK_INT(w.parked[0].seq, 11);
    CHECK_INT(w.parked[0].job_id, 5);
    CHECK_INT(w.parked[0].attempts, 1);
    CHECK_INT(w.parked[0].failing_since, t);
    CHECK_INT(w.parked[0].next_attempt_at, t + 30);
    next = w;
    next.parked = NULL;
    CHECK_INT(store_webhook_done(s, "ops", "tok-b", &next, &p2, 0, t + 3, &out), STORE_OK);
    struct store_webhook *all = NULL;
    size_t n = 0;
    CHECK_INT(store_webhooks(s, "ops", &all, &n), STORE_OK);
    CHECK_INT(all[0].nparked_all, 2);
    store_webhooks_free(all, n);
    /* A retry's new state replaces the row; a delivered one is deleted. */
    now = t + 4;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-c", 60, &now, &w), STORE_OK);
    CHECK_INT(w.nparked, 2);
    p1.attempts = 2;
    next = w;
    next.parked = NULL;
    CHECK_INT(store_webhook_done(s, "ops", "tok-c", &next, &p1, 12, t + 5, &out), STORE_OK);
    now = t + 6;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-d", 60, &now, &w), STORE_OK);
    CHECK_INT(w.nparked, 1);
    CHECK_INT(w.parked[0].attempts, 2);
    /* A lost lease writes no parked event either. */
    CHECK_INT(store_webhook_done(s, "ops", "tok-c", &next, &p2, 11, t + 7, &out), STORE_LEASE_LOST);
    CHECK_INT(store_webhook_delete(s, "ops", t + 8, &out), STORE_OK);
    CHECK_INT(put(s, "ops", SECRET_A, t + 9, &out, &created), STORE_OK);
    now = t + 10;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-e", 60, &now, &w), STORE_OK);
    CHECK_INT(w.nparked, 0); /* the delete took them */
    store_webhook_clear(&w);
    store_webhook_clear(&out);
    store_close(s);
}

TEST(delete_removes_it)
{
    int64_t t = clock_now() + 1000, now = t;
    struct store_webhook w = {0}, out = {0};
    struct store *s = open_leased(t, &w);
    CHECK(s != NULL);
    CHECK_INT(store_webhook_delete(s, "ops", t + 1, &out), STORE_OK);
    CHECK_STR(out.name, "ops");
    CHECK_INT(store_webhook_delete(s, "ops", t + 1, &out), STORE_NOT_FOUND);
    CHECK_INT(store_webhook_done(s, "ops", "tok-a", &w, NULL, 0, t + 2, &out), STORE_NOT_FOUND);
    now = t + 3;
    CHECK_INT(store_webhook_lease(s, "ops", "tok-b", 60, &now, &out), STORE_NOT_FOUND);
    store_webhook_clear(&w);
    store_webhook_clear(&out);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(put_creates_then_replaces), TEST_ENTRY(count_is_bounded),
          TEST_ENTRY(lease_is_one_holder_and_rechecked),
          TEST_ENTRY(not_due_or_disabled_is_not_leased),
          TEST_ENTRY(parked_events_are_kept_for_the_holder), TEST_ENTRY(delete_removes_it))
