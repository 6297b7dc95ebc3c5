/* Releasing webhook subscriptions (store_webhook.h): apart from store.c, which calls the
 * backends that call these (store.c holds the synchronous writes). */
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
    free(w->parked);
    w->parked = NULL;
    w->nparked = 0;
    w->url = w->queues = w->secret = w->prev_secret = NULL;
    w->last_error = w->disabled_reason = w->lease_token = NULL;
}

void store_webhooks_free(struct store_webhook *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        store_webhook_clear(&a[i]);
    free(a);
}
