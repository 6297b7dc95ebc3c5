/* Webhook subscriptions in the store (../shared/API.md "Events, webhooks and trace context";
 * docs/events.md "Webhooks"): the row a backend keeps per subscription, with its delivery
 * state and its delivery lease, and the calls the API and the delivery thread make on it. The
 * write kind is store.h's STORE_CALL_WEBHOOK, whose op says which write it is; the rules of
 * store.h hold for every function here. */
#ifndef JOBQ_STORE_WEBHOOK_H
#define JOBQ_STORE_WEBHOOK_H

#include "job.h"
#include "store.h"

/* The most subscriptions a store holds: a PUT of a new name beyond it is refused
 * (STORE_CONFLICT), so that GET /webhooks answers them all at once and a delivery pass looks
 * at each. */
#define STORE_WEBHOOKS_MAX 100

/* An event an unordered subscription set aside (parked) so that the events of other jobs go
 * on: one that failed, and every later event of the same job (sent after it, in seq order).
 * Each parked event has its own retry state. */
struct store_webhook_parked {
    int64_t seq;
    int64_t job_id;
    int64_t attempts;        /* attempts made at it */
    int64_t failing_since;   /* its first failed attempt; JOB_NONE: none yet (held behind) */
    int64_t next_attempt_at; /* JOB_NONE: as soon as it is the first of its job */
};

/* The most events one subscription keeps parked: past it, an unordered subscription holds
 * its cursor (as an ordered one does) until some are delivered or given up. */
#define STORE_WEBHOOK_PARKED_MAX 1000

/* A subscription as the store keeps it. Owns its strings and parked (store_webhook_clear()). */
struct store_webhook {
    char name[JOB_QUEUE_MAX + 1];
    char *url;          /* http(s), checked by webhook_url_parse */
    unsigned types;     /* bit 1 << type for each event type sent; 0: every type */
    char *queues;       /* the queues sent, comma-separated; NULL: every queue */
    char *secret;       /* whsec_...: signs every delivery */
    char *prev_secret;  /* the secret it replaced, NULL: none; signs too until prev_until */
    int64_t prev_until; /* JOB_NONE when there is no previous secret */
    int enabled;        /* 0: nothing is delivered (by PUT, or a 410: disabled_reason) */
    int ordered;        /* 1: the subscription asked for one order across all its events */
    int64_t created_at;
    int64_t updated_at;
    /* The delivery state. */
    int64_t delivered_seq;   /* every event up to this seq is done (delivered or given up) */
    int64_t failing_since;   /* the first failed attempt at the event after it; JOB_NONE */
    int64_t next_attempt_at; /* no attempt before; JOB_NONE: at once */
    int64_t attempts;        /* attempts made at the event after delivered_seq */
    int64_t last_status;     /* of the last attempt: its HTTP status, 0: no answer; JOB_NONE */
    char *last_error;        /* of the last attempt that failed; NULL */
    int64_t last_attempt_at; /* JOB_NONE: never */
    char *disabled_reason;   /* why delivery stopped by itself (a 410); NULL */
    int64_t deliveries;      /* attempts answered 2xx, in all */
    int64_t failures;        /* attempts that failed, in all */
    int64_t failed_events;   /* events given up after failing for three days */
    char *lease_token;       /* the delivery lease: NULL when none is held */
    int64_t lease_until;     /* JOB_NONE when none is held */
    int64_t retry_at;        /* unordered: the next attempt at a parked event; JOB_NONE: none */
    int64_t nparked_all;     /* events parked (reads and the lease) */
    /* Only in the answer of store_webhook_lease: the parked events by seq (at most
     * STORE_WEBHOOK_PARKED_MAX). */
    struct store_webhook_parked *parked;
    size_t nparked;
};

/* Release what w owns and zero it (its name stays). Accepts NULL. */
void store_webhook_clear(struct store_webhook *w);

/* Release n subscriptions and the array. Accepts NULL. */
void store_webhooks_free(struct store_webhook *a, size_t n);

/* Which write a STORE_CALL_WEBHOOK is. */
enum store_webhook_op {
    STORE_WEBHOOK_PUT,    /* store_webhook_put */
    STORE_WEBHOOK_DELETE, /* store_webhook_delete */
    STORE_WEBHOOK_LEASE,  /* store_webhook_lease */
    STORE_WEBHOOK_DONE,   /* store_webhook_done */
};

/* STORE_CALL_WEBHOOK: its arguments and outputs (call->webhook points to it). */
struct store_webhook_call {
    enum store_webhook_op op;
    const char *name;               /* in: the subscription */
    const struct store_webhook *in; /* in: put: the subscription; done: the delivery state */
    const char *fresh_secret;       /* in: put: the secret of a new one that gives none */
    const char *token;              /* in: lease: the new token; done: the lease's */
    int64_t lease_seconds;          /* in: lease: how long it lasts from the write's now */
    const struct store_webhook_parked *park; /* in: done: a parked event to insert or replace */
    int64_t unpark;                          /* in: done: the seq of one to delete; 0: none */
    struct store_webhook *out;               /* out: the row as stored (done: after the write) */
    int created;                             /* out: put: 1 when the name was new */
};

/* Create or replace subscription in->name with in's url, types, queues, enabled and ordered,
 * in one transaction. A new one takes in->secret, or fresh_secret when in->secret is NULL,
 * and starts after the newest event (delivered_seq: the highest seq written so far; the
 * events before it are not sent). A replace keeps the delivery state and the secret when
 * in->secret is NULL; a different in->secret becomes the secret and the one it replaces
 * signs too until now + WEBHOOK_ROTATE_SECONDS (webhook.h). A replace that enables a
 * subscription clears its disabled_reason and its failing state (the event at the head is
 * tried again at once). *out is the row as stored, *created 1 when the name was new.
 * STORE_CONFLICT when the name is new and STORE_WEBHOOKS_MAX subscriptions exist (nothing is
 * written). */
enum store_result store_webhook_put(struct store *s, const struct store_webhook *in,
                                    const char *fresh_secret, int64_t now,
                                    struct store_webhook *out, int *created);

/* Delete subscription `name` and its parked events; *out is the row as it was. STORE_NOT_FOUND when there is none.
 * A delivery in flight ends with STORE_NOT_FOUND from store_webhook_done. */
enum store_result store_webhook_delete(struct store *s, const char *name, int64_t now,
                                       struct store_webhook *out);

/* Take the delivery lease of subscription `name` for token until now + seconds, in one
 * compare and swap: only when it is enabled, no lease is held (or the one held ended:
 * lease_until <= now) and its next attempt is due (next_attempt_at <= now), now being the
 * store's clock when the write runs (never earlier than *now, the caller's clock, and written
 * back to *now). *out is the row as leased, with its parked events.
 * STORE_CONFLICT when it cannot be taken (nothing written), STORE_NOT_FOUND when there is no
 * such subscription. At most one holder at a time across every process. */
enum store_result store_webhook_lease(struct store *s, const char *name, const char *token,
                                      int64_t seconds, int64_t *now, struct store_webhook *out);

/* End the lease `token` of subscription `name` and write in's delivery state (delivered_seq,
 * failing_since, next_attempt_at, attempts, last_status, last_error, last_attempt_at,
 * deliveries, failures, failed_events, retry_at; enabled 0 with disabled_reason when
 * in->enabled is 0), with the parked event park (NULL: none) inserted or replaced and the one
 * of seq unpark (0: none) deleted, in one transaction whose first statement checks the lease: only while the lease is still that token and has
 * not ended (lease_until > now, the store's clock when the write runs, never earlier than
 * the caller's now). *out is the row after the write. STORE_LEASE_LOST when the
 * lease was lost (nothing written: another process may take the subscription over and repeat
 * the attempt), STORE_NOT_FOUND when the subscription is gone. */
enum store_result store_webhook_done(struct store *s, const char *name, const char *token,
                                     const struct store_webhook *in,
                                     const struct store_webhook_parked *park, int64_t unpark,
                                     int64_t now, struct store_webhook *out);

/* Every subscription ordered by name (at most STORE_WEBHOOKS_MAX) when name is NULL, else
 * subscription `name` alone (STORE_NOT_FOUND when there is none). *out is a new array (NULL
 * when empty) the caller releases with store_webhooks_free(). Never waits for a writer. */
static inline enum store_result store_webhooks(struct store *s, const char *name,
                                               struct store_webhook **out, size_t *n)
{
    return s->ops->webhooks(s, name, out, n);
}

#endif
