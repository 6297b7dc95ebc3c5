/* Webhook subscriptions (store_webhook.h): releasing them, and the synchronous writes built
 * on store_submit. */
#include "store_webhook.h"

#include <stdlib.h>

void store_webhook_clear(struct store_webhook *w)
{
    if (!w)
        return;
    free(w->url);
    free(w->queues);
    free(w->secret);
    free(w->prev_secret);
    free(w->last_error);
    free(w->disabled_reason);
    free(w->lease_token);
    w->url = w->queues = w->secret = w->prev_secret = NULL;
    w->last_error = w->disabled_reason = w->lease_token = NULL;
}

void store_webhooks_free(struct store_webhook *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        store_webhook_clear(&a[i]);
    free(a);
}

/* Run the webhook write wc at *now (at_clock: on the store's clock, written back). */
static enum store_result run_at(struct store *s, struct store_webhook_call *wc, int64_t *now,
                                int at_clock)
{
    struct store_call call = {
        .kind = STORE_CALL_WEBHOOK, .now = *now, .at_clock = at_clock, .webhook = wc};
    enum store_result r = store_call_run(s, &call);
    *now = call.now;
    return r;
}

static enum store_result run(struct store *s, struct store_webhook_call *wc, int64_t now)
{
    return run_at(s, wc, &now, 0);
}

enum store_result store_webhook_put(struct store *s, const struct store_webhook *in,
                                    const char *fresh_secret, int64_t now,
                                    struct store_webhook *out, int *created)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_PUT,
                                    .name = in->name,
                                    .in = in,
                                    .fresh_secret = fresh_secret,
                                    .out = out};
    enum store_result r = run(s, &wc, now);
    *created = wc.created;
    return r;
}

enum store_result store_webhook_delete(struct store *s, const char *name, int64_t now,
                                       struct store_webhook *out)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_DELETE, .name = name, .out = out};
    return run(s, &wc, now);
}

enum store_result store_webhook_lease(struct store *s, const char *name, const char *token,
                                      int64_t seconds, int64_t *now, struct store_webhook *out)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_LEASE,
                                    .name = name,
                                    .token = token,
                                    .lease_seconds = seconds,
                                    .out = out};
    return run_at(s, &wc, now, 1);
}

enum store_result store_webhook_done(struct store *s, const char *name, const char *token,
                                     const struct store_webhook *in, int64_t now,
                                     struct store_webhook *out)
{
    struct store_webhook_call wc = {
        .op = STORE_WEBHOOK_DONE, .name = name, .in = in, .token = token, .out = out};
    return run_at(s, &wc, &now, 1);
}
