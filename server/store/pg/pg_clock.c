/* The PostgreSQL store's clock: the database's, as the caller's now plus the skew measured at
 * every connect and ping (pg_store.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg_schema.h"
#include "pg_store.h"

/* The skew in whole seconds. */
static int64_t skew_s(struct pg_store *st)
{
    int64_t skew = atomic_load(&st->skew_ms);
    return skew >= 0 ? (skew + 500) / 1000 : -((-skew + 500) / 1000);
}

int64_t pg_now(struct pg_store *st, int64_t now)
{
    return now + skew_s(st);
}

int64_t pg_clock(struct store *s, int64_t now)
{
    return pg_now((struct pg_store *)s, now);
}

int64_t pg_host_time(struct pg_store *st, int64_t t)
{
    return t - skew_s(st);
}

void pg_calls_clock(struct pg_call *calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t now = pg_now(calls[i].st, clock_now());
        if (calls[i].call->at_clock && now > calls[i].now)
            calls[i].now = now;
    }
}

void pg_call_begin(void *arg)
{
    pg_calls_clock(arg, 1);
}

enum store_result pg_clock_sync(struct pg_store *st, struct pg_conn *c)
{
    /* Prepared first, so that the exchange timed below is one round trip. */
    enum store_result r = pg_prepare(c, PG_CLOCK, "clock");
    if (r != STORE_OK)
        return r;
    char version[16];
    snprintf(version, sizeof version, "%d", pg_schema_version());
    const char *params[1] = {version};
    int64_t t0 = clock_now_ms(), m0 = clock_mono_us();
    PGresult *res = pg_conn_exec(c, PG_CLOCK, 1, params, "clock", &r);
    int64_t t1 = clock_now_ms(), m1 = clock_mono_us();
    if (!res)
        return r;
    int64_t server = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    int standby = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    long long breaking = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    PQclear(res);
    if (breaking > 0) {
        /* A newer jobqd migrated the schema past what this program works with: not ready
         * (readyz answers 503, no new connection opens), and say why. */
        log_error("postgresql: migration %lld of a newer jobqd changes what this program relies "
                  "on: this process is not ready; replace it by the newer build "
                  "(docs/upgrades.md)",
                  breaking);
        return STORE_UNAVAILABLE;
    }
    if (standby) {
        /* A standby (a demoted primary, or a URL without target_session_attrs=read-write):
         * no writes here. Drop it and let the next connect find the primary. */
        c->bad = 1;
        log_warn("postgresql: the server is a standby (read-only); reconnecting");
        return STORE_UNAVAILABLE;
    }
    atomic_store(&st->skew_ms, server - (t0 + t1) / 2);
    pg_rtt_record(st, m1 - m0);
    return STORE_OK;
}

void pg_rtt_record(struct pg_store *st, int64_t us)
{
    unsigned i = atomic_fetch_add(&st->rtt_n, 1) % PG_RTT_SAMPLES;
    atomic_store(&st->rtt_samples[i], us > 0 ? us : 1);
    /* The least: a busy server, or a busy host, answers late. */
    int64_t least = 0;
    for (unsigned k = 0; k < PG_RTT_SAMPLES; k++) {
        int64_t v = atomic_load(&st->rtt_samples[k]);
        if (v > 0 && (least == 0 || v < least))
            least = v;
    }
    atomic_store(&st->rtt_us, least);
}
