/* store_cancel and store_retry for PostgreSQL: one guarded update each, and what it does to
 * the job's dependents, in one transaction. */
#include <string.h>

#include "pg_deps.h"
#include "pg_row.h"
#include "pg_store.h"

/* One cancel or retry in its own transaction: the guarded update, then the dependents of the
 * job (depend.h): cancelled by its end, or back to blocked by its retry. */
static enum store_result admin_tx(struct pg_conn *c, void *arg, struct store_news *notes)
{
    struct pg_call *a = arg;
    struct store_call *call = a->call;
    struct job *out = store_call_job_out(call);
    int cancel = call->kind == STORE_CALL_CANCEL;
    int64_t id = store_call_job_id(call);
    char idb[24], now[24];
    const char *p[2] = {pg_int_param(idb, id), pg_int_param(now, a->now)};
    job_clear(out);
    enum store_result r =
        pg_one_row(c, cancel ? PG_CANCEL : PG_RETRY, 2, p, 0, cancel ? "cancel" : "retry", out);
    if (r == STORE_NOT_FOUND) /* no such job, or its state does not allow the change */
        return pg_miss(c, id, STORE_CONFLICT);
    int blocked = 0; /* a retried job whose dependencies have not all ended waits for them */
    if (r == STORE_OK && !cancel)
        r = pg_deps_retried(c, out, &blocked);
    if (r != STORE_OK)
        return r;
    if ((!cancel && !blocked) || out->concurrency_key)
        store_news_ready(notes, out->queue, !out->requires); /* queued again, or a key's room */
    return pg_deps_moved(c, out->id, out->queue, out->has_dependents, a->now, notes);
}

static void admin_discard(void *p)
{
    struct pg_call *a = p;
    job_clear(store_call_job_out(a->call));
}

static int admin_prepare(struct pg_call *pc, const char *name)
{
    pc->tx = (struct pg_tx){.name = name, .fn = admin_tx, .discard = admin_discard};
    memset(store_call_job_out(pc->call), 0, sizeof(struct job));
    return 1;
}

int pg_cancel_prepare(struct pg_call *pc)
{
    return admin_prepare(pc, "cancel");
}

int pg_retry_prepare(struct pg_call *pc)
{
    return admin_prepare(pc, "retry");
}
