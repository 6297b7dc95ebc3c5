/* The PostgreSQL store's news after a commit (pg_news_publish), and its due list: the queues
 * of jobs this process scheduled for later, with their run_at, announced when that time comes
 * (see pg_store.h). */
#include <stdio.h>
#include <string.h>

#include "pg_store.h"

static void due_add(struct pg_store *st, const struct store_news *n)
{
    pthread_mutex_lock(&st->due_mu);
    for (size_t i = 0; i < n->nlater; i++) {
        size_t k = 0;
        while (k < st->ndue &&
               (st->due[k].at != n->later_at[i] || strcmp(st->due[k].queue, n->later[i]) != 0))
            k++;
        if (k < st->ndue || st->ndue == PG_DUE_MAX)
            continue; /* known already, or full: the claims' own looks cover it */
        struct pg_due *d = &st->due[st->ndue++];
        d->at = n->later_at[i];
        snprintf(d->queue, sizeof d->queue, "%s", n->later[i]);
    }
    pthread_mutex_unlock(&st->due_mu);
}

void pg_due_announce(struct pg_store *st, int64_t now)
{
    struct store_news notes = {0};
    pthread_mutex_lock(&st->due_mu);
    for (size_t k = 0; k < st->ndue;) {
        if (st->due[k].at > now) {
            k++;
            continue;
        }
        store_news_ready(&notes, st->due[k].queue, 0);
        st->due[k] = st->due[--st->ndue];
    }
    pthread_mutex_unlock(&st->due_mu);
    pg_news_publish(st, &notes);
    store_news_clear(&notes);
}

void pg_news_publish(struct pg_store *st, const struct store_news *n)
{
    /* The hooks' callers time their waits on this host's clock. */
    store_news_fire(&st->hooks, n, pg_host_time(st, 0));
    pg_listen_announce(st, n);
    due_add(st, n);
}
