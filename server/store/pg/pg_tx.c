/* The PostgreSQL store's transaction runner: one transaction on a pooled connection, run
 * again a bounded number of times after contention or a dead connection (pg_store.h). */
#include "clock.h"
#include "log.h"
#include "pg_store.h"

enum store_result pg_tx_run(struct pg_store *st, const struct pg_tx *tx)
{
    enum store_result r = STORE_ERROR;
    for (int attempt = 0; attempt < PG_TX_TRIES; attempt++) {
        if (atomic_load(&st->abandoned)) {
            r = STORE_UNAVAILABLE;
            break;
        }
        if (attempt > 0)
            atomic_fetch_add(&st->retries, 1);
        struct pg_conn *c = NULL;
        r = pg_pool_take(st, &c);
        if (r != STORE_OK)
            break;
        r = pg_command(c, "BEGIN", tx->name);
        if (r != STORE_OK) {
            /* Nothing was sent but BEGIN: a connection that died while idle in the pool (a
             * restart, pg_terminate_backend, a failover) is safe to replace and try again. */
            pg_pool_give(st, c);
            if (r == STORE_UNAVAILABLE || r == STORE_BUSY)
                continue;
            break;
        }
        struct store_news notes = {0};
        if (tx->begin)
            tx->begin(tx->arg);
        r = tx->fn(c, tx->arg, &notes);
        int committed = 0;
        if (r == STORE_OK || r == STORE_EXISTS) {
            /* A COMMIT that fails on a lost connection may have committed: 503, and the
             * client retries (at least once, as documented). */
            enum store_result cr = pg_commit(c, st->statement_ms, tx->name);
            if (cr == STORE_OK)
                committed = 1;
            else
                r = cr;
        } else {
            pg_command(c, "ROLLBACK", tx->name); /* a failure marks the connection bad */
        }
        pg_pool_give(st, c);
        if (committed) {
            atomic_fetch_add(&st->commits, 1);
            atomic_fetch_add(&st->ops, tx->ops ? tx->ops : 1);
            pg_news_publish(st, &notes);
            store_news_clear(&notes);
            return r;
        }
        store_news_clear(&notes);
        if (tx->discard)
            tx->discard(tx->arg);
        if (r != STORE_BUSY)
            break;
    }
    if (r == STORE_BUSY || r == STORE_UNAVAILABLE || r == STORE_ERROR)
        atomic_fetch_add(&st->errors, 1);
    return r;
}
