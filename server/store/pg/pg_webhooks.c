/* Webhook subscriptions for PostgreSQL (store_webhook.h): the read on a pooled read
 * connection, and put (one at a time across processes, so the count of subscriptions holds),
 * delete, the delivery lease's compare and swap and an attempt's end. */
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"
#include "store_webhook.h"
#include "webhook.h"

/* Row `row` of res (WEBHOOK_COLS) into out. Returns 0, or -1 when out of memory (logged; out
 * is left empty). */
static int webhook_row(const PGresult *res, int row, struct store_webhook *w)
{
    *w = (struct store_webhook){0};
    snprintf(w->name, sizeof w->name, "%s", PQgetvalue(res, row, 0));
    int bad = pg_row_text(res, row, 1, &w->url) | pg_row_text(res, row, 3, &w->queues) |
              pg_row_text(res, row, 4, &w->secret) | pg_row_text(res, row, 5, &w->prev_secret) |
              pg_row_text(res, row, 16, &w->last_error) |
              pg_row_text(res, row, 18, &w->disabled_reason) |
              pg_row_text(res, row, 22, &w->lease_token);
    w->types = (unsigned)pg_row_int(res, row, 2);
    w->prev_until = pg_row_int(res, row, 6);
    w->enabled = pg_row_int(res, row, 7) != 0;
    w->ordered = pg_row_int(res, row, 8) != 0;
    w->created_at = pg_row_int(res, row, 9);
    w->updated_at = pg_row_int(res, row, 10);
    w->delivered_seq = pg_row_int(res, row, 11);
    w->failing_since = pg_row_int(res, row, 12);
    w->next_attempt_at = pg_row_int(res, row, 13);
    w->attempts = pg_row_int(res, row, 14);
    w->last_status = pg_row_int(res, row, 15);
    w->last_attempt_at = pg_row_int(res, row, 17);
    w->deliveries = pg_row_int(res, row, 19);
    w->failures = pg_row_int(res, row, 20);
    w->failed_events = pg_row_int(res, row, 21);
    w->lease_until = pg_row_int(res, row, 23);
    w->retry_at = pg_row_int(res, row, 24);
    w->nparked_all = PQnfields(res) > 25 ? pg_row_int(res, row, 25) : 0;
    if (bad || !w->url || !w->secret) {
        log_error("out of memory reading webhook %s", w->name);
        store_webhook_clear(w);
        return -1;
    }
    return 0;
}

enum store_result pg_read_webhooks(struct store *s, const char *name, struct store_webhook **out,
                                   size_t *n)
{
    *out = NULL;
    *n = 0;
    const char *params[1] = {name};
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), name ? PG_WEBHOOK_GET : PG_WEBHOOKS_ALL,
                                name ? 1 : 0, params, "webhooks", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    if (rows > 0 && !(*out = calloc((size_t)rows, sizeof **out))) {
        log_error("out of memory reading %d webhooks", rows);
        r = STORE_ERROR;
    }
    for (int i = 0; r == STORE_OK && i < rows; i++) {
        if (webhook_row(res, i, &(*out)[i]) != 0)
            r = STORE_ERROR;
        else
            (*n)++;
    }
    PQclear(res);
    if (r != STORE_OK) {
        store_webhooks_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return r == STORE_OK && name && *n == 0 ? STORE_NOT_FOUND : r;
}

/* Run statement id; the one row it returns into *out (STORE_NOT_FOUND: none; *out is left
 * alone then). out NULL: only whether there is one. */
static enum store_result one_row(struct pg_conn *c, enum pg_stmt_id id, int n,
                                 const char *const *params, const char *what,
                                 struct store_webhook *out)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, what, &r);
    if (!res)
        return r;
    r = STORE_NOT_FOUND;
    if (PQntuples(res) > 0 && !out)
        r = STORE_OK;
    else if (PQntuples(res) > 0) {
        store_webhook_clear(out);
        r = webhook_row(res, 0, out) == 0 ? STORE_OK : STORE_ERROR;
    }
    PQclear(res);
    return r;
}

/* When a write's row is missing: `missing` when subscription name exists, else
 * STORE_NOT_FOUND (or a failure). */
static enum store_result exists_or(struct pg_conn *c, const char *name, enum store_result missing)
{
    const char *params[1] = {name};
    enum store_result r = one_row(c, PG_WEBHOOK_GET, 1, params, "webhook read", NULL);
    return r == STORE_OK ? missing : r;
}

/* The parked events of w into w->parked (STORE_WEBHOOK_PARKED_MAX at most). */
static enum store_result parked_of(struct pg_conn *c, struct store_webhook *w)
{
    char b[24];
    const char *params[2] = {w->name, pg_int_param(b, STORE_WEBHOOK_PARKED_MAX)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_WEBHOOK_PARKED, 2, params, "webhook parked", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    if (rows > 0 && !(w->parked = calloc((size_t)rows, sizeof *w->parked))) {
        PQclear(res);
        log_error("out of memory reading parked events of webhook %s", w->name);
        return STORE_ERROR;
    }
    for (int i = 0; i < rows; i++)
        w->parked[w->nparked++] = (struct store_webhook_parked){
            .seq = pg_row_int(res, i, 0),
            .job_id = pg_row_int(res, i, 1),
            .attempts = pg_row_int(res, i, 2),
            .failing_since = pg_row_int(res, i, 3),
            .next_attempt_at = pg_row_int(res, i, 4),
        };
    PQclear(res);
    w->nparked_all = rows;
    return STORE_OK;
}

/* Run the parked-event write id on name with seq (and, for a park, p's other fields). */
static enum store_result park_write(struct pg_conn *c, enum pg_stmt_id id, const char *name,
                                    int64_t seq, const struct store_webhook_parked *p)
{
    char b[5][24];
    const char *params[6] = {name,
                             pg_int_param(b[0], seq),
                             p ? pg_int_param(b[1], p->job_id) : NULL,
                             p ? pg_int_param(b[2], p->attempts) : NULL,
                             p ? pg_int_param(b[3], p->failing_since) : NULL,
                             p ? pg_int_param(b[4], p->next_attempt_at) : NULL};
    int n = id == PG_WEBHOOK_PARK ? 6 : id == PG_WEBHOOK_UNPARK ? 2 : 1;
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, "webhook park", &r);
    PQclear(res);
    return res ? STORE_OK : r;
}

static enum store_result put(struct pg_conn *c, struct store_webhook_call *a, int64_t now)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_WEBHOOK_LOCK, 0, NULL, "webhook put: lock", &r);
    if (!res)
        return r;
    PQclear(res);
    r = exists_or(c, a->name, STORE_EXISTS);
    if (r != STORE_EXISTS && r != STORE_NOT_FOUND)
        return r;
    a->created = r == STORE_NOT_FOUND;
    const struct store_webhook *in = a->in;
    char b[4][24];
    const char *params[11] = {a->name,
                              in->url,
                              pg_int_param(b[0], (int64_t)in->types),
                              in->queues,
                              in->secret,
                              a->fresh_secret,
                              in->enabled ? "true" : "false",
                              in->ordered ? "true" : "false",
                              pg_int_param(b[1], now),
                              pg_int_param(b[2], now + WEBHOOK_ROTATE_SECONDS),
                              pg_int_param(b[3], STORE_WEBHOOKS_MAX)};
    r = one_row(c, PG_WEBHOOK_PUT, 11, params, "webhook put", a->out);
    return r == STORE_NOT_FOUND ? STORE_CONFLICT : r; /* a new name past the bound */
}

static enum store_result done(struct pg_conn *c, struct store_webhook_call *a, int64_t now)
{
    const struct store_webhook *in = a->in;
    char b[13][24];
    const char *params[16] = {a->name,
                              a->token,
                              pg_int_param(b[0], now),
                              pg_int_param(b[1], in->delivered_seq),
                              pg_int_param(b[2], in->failing_since),
                              pg_int_param(b[3], in->next_attempt_at),
                              pg_int_param(b[4], in->attempts),
                              pg_int_param(b[5], in->last_status),
                              in->last_error,
                              pg_int_param(b[6], in->last_attempt_at),
                              pg_int_param(b[7], in->deliveries),
                              pg_int_param(b[8], in->failures),
                              pg_int_param(b[9], in->failed_events),
                              in->enabled ? "true" : "false",
                              in->disabled_reason,
                              pg_int_param(b[10], in->retry_at)};
    enum store_result r = one_row(c, PG_WEBHOOK_DONE, 16, params, "webhook done", a->out);
    if (r == STORE_OK && a->park)
        r = park_write(c, PG_WEBHOOK_PARK, a->name, a->park->seq, a->park);
    if (r == STORE_OK && a->unpark)
        r = park_write(c, PG_WEBHOOK_UNPARK, a->name, a->unpark, NULL);
    return r == STORE_NOT_FOUND ? exists_or(c, a->name, STORE_LEASE_LOST) : r;
}

static enum store_result webhook_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct pg_call *pc = p;
    struct store_webhook_call *a = pc->call->webhook;
    const char *name[1] = {a->name};
    switch (a->op) {
    case STORE_WEBHOOK_PUT:
        return put(c, a, pc->now);
    case STORE_WEBHOOK_DELETE: {
        enum store_result r = one_row(c, PG_WEBHOOK_DELETE, 1, name, "webhook delete", a->out);
        return r == STORE_OK ? park_write(c, PG_WEBHOOK_UNPARK_ALL, a->name, 0, NULL) : r;
    }
    case STORE_WEBHOOK_LEASE: {
        char b[2][24];
        const char *params[4] = {a->name, a->token, pg_int_param(b[0], pc->now + a->lease_seconds),
                                 pg_int_param(b[1], pc->now)};
        enum store_result r = one_row(c, PG_WEBHOOK_LEASE, 4, params, "webhook lease", a->out);
        if (r == STORE_OK)
            return parked_of(c, a->out);
        return r == STORE_NOT_FOUND ? exists_or(c, a->name, STORE_CONFLICT) : r;
    }
    default:
        return done(c, a, pc->now);
    }
}

static void webhook_discard(void *p)
{
    struct pg_call *pc = p;
    store_webhook_clear(pc->call->webhook->out);
    pc->call->webhook->created = 0;
}

int pg_webhook_prepare(struct pg_call *pc)
{
    static const char *const names[] = {"webhook put", "webhook delete", "webhook lease",
                                        "webhook done"};
    pc->tx = (struct pg_tx){
        .name = names[pc->call->webhook->op], .fn = webhook_tx, .discard = webhook_discard};
    return 1;
}
